"""The streaming Parquet writer: atomic, with footer metadata, readable by every reader."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qgen.io.parquet import ParquetSink, read_metadata
from qgen.schema import EXAMPLE_SCHEMA

ROW = {"id": "a", "split": "train", "source": "t", "lf_type": "sparql", "logical_form": "SELECT ?x {}",
       "normalized_lf": "SELECT ?x {}", "lf_tokens": ["select"], "lf_tokens_raw": ["select"], "question": "q?", "question_tokens": ["q", "?"],
       "entities": [{"id": "m.01", "surface": "ns:m.01", "name": "Bali", "name_source": "given"}], "answers": []}


def test_rows_and_metadata_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    sink = ParquetSink(path, EXAMPLE_SCHEMA, {"schema_version": "1.0"}, batch_rows=3)
    for i in range(10):
        sink.write({**ROW, "id": str(i)})
    assert not path.exists()  # nothing under the final name until closed
    sink.close({"counts": {"inputs": 10}})
    table = pq.read_table(path)
    assert table.num_rows == 10 and table.schema.equals(EXAMPLE_SCHEMA)
    assert table.column("id").to_pylist() == [str(i) for i in range(10)]
    meta = read_metadata(path)
    assert meta == {"schema_version": "1.0", "counts": {"inputs": 10}, "rows": 10}


def test_empty_file_is_valid(tmp_path: Path) -> None:
    path = ParquetSink(tmp_path / "empty.parquet", EXAMPLE_SCHEMA).close()
    assert pq.read_table(path).num_rows == 0


def test_error_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    with pytest.raises(RuntimeError):
        with ParquetSink(path, EXAMPLE_SCHEMA, batch_rows=1) as sink:
            sink.write(ROW)
            raise RuntimeError("crash mid-run")
    assert list(tmp_path.iterdir()) == []


def test_schema_mismatch_is_an_error(tmp_path: Path) -> None:
    sink = ParquetSink(tmp_path / "x.parquet", EXAMPLE_SCHEMA, batch_rows=1)
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, TypeError, KeyError)):
        sink.write({**ROW, "lf_tokens": 5})
