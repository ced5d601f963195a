"""Streaming Parquet writing that never leaves a half-written file under the final name.

Rows go to ``<name>.tmp-<pid>`` through one ``pq.ParquetWriter`` in batches; ``close()`` renames
the file into place, so a reader either sees the complete file or none. Metadata (schema version,
configuration, counts) is stored in the Parquet footer as JSON under the key ``qgen``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

METADATA_KEY = b"qgen"


class ParquetSink:
    """Append rows (dicts) and get a complete Parquet file only when closed without error."""

    def __init__(self, path: str | Path, schema: pa.Schema, metadata: Mapping[str, Any] | None = None,
                 batch_rows: int = 4096) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}")
        self.schema = schema
        self.metadata = dict(metadata or {})
        self.batch_rows = batch_rows
        self.rows = 0
        self._buffer: list[dict[str, Any]] = []
        self._writer: pq.ParquetWriter | None = None

    def write(self, row: Mapping[str, Any]) -> None:
        self._buffer.append(dict(row))
        if len(self._buffer) >= self.batch_rows:
            self._flush()

    def write_all(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.write(row)

    def close(self, extra_metadata: Mapping[str, Any] | None = None) -> Path:
        """Finish the file (also when it has no rows) and move it to its final name."""
        self._flush(final=True)
        assert self._writer is not None
        self.metadata.update(extra_metadata or {})
        self.metadata["rows"] = self.rows
        # Footer key-value metadata is written at close, so it can carry the final counts.
        self._writer.add_key_value_metadata({METADATA_KEY.decode(): json.dumps(self.metadata, default=str)})
        self._writer.close()
        os.replace(self.tmp, self.path)
        return self.path

    def abort(self) -> None:
        """Drop the temporary file (after an error)."""
        if self._writer is not None:
            self._writer.close()
        self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> "ParquetSink":
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _flush(self, final: bool = False) -> None:
        if not self._buffer and not final:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.tmp, self.schema)
        if self._buffer:
            self._writer.write_table(pa.Table.from_pylist(self._buffer, schema=self.schema))
            self.rows += len(self._buffer)
            self._buffer = []


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The ``qgen`` footer metadata of a Parquet file written by ``ParquetSink``."""
    meta = pq.ParquetFile(path).metadata.metadata or {}
    return json.loads(meta.get(METADATA_KEY, b"{}"))
