"""Task results stored as plain JSON, and cached ones read back only when they are (issue 17).

Prefect deserializes a stored result with the serializer named in the stored metadata, whatever the
task declares: a planted record naming the pickle serializer under a predictable cache key (the
preprocess task's ``preprocess-<sha256>``) would be unpickled by the next cached run. So qgen's
tasks persist with ``JSON_RESULTS`` (the standard ``json`` module and no object hooks: dicts, lists,
strings, numbers, booleans, None), and their cache policies keep each key's metadata apart, in
``CheckedKeyStorage`` (``<PREFECT_LOCAL_STORAGE_PATH>/qgen-cache-keys``), which hands Prefect no
metadata but one naming ``JSON_RESULTS``: the result a cached key points to is read with plain
``json.loads``, whatever its file holds, and refused metadata is a cache miss (the task runs again
and writes its key anew). Tasks return ``plain(...)`` values, so fresh and cached results are the
same JSON.
"""
from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from prefect.cache_policies import DEFAULT, CachePolicy
from prefect.filesystems import LocalFileSystem
from prefect.serializers import JSONSerializer

JSON_RESULTS = JSONSerializer(object_encoder=None, object_decoder=None)
KEYS_FOLDER = "qgen-cache-keys"
_ACCEPTED = JSON_RESULTS.model_dump()


class UnsafeResultError(ValueError):
    """Cache metadata that does not name qgen's JSON results: never used to read a result."""


def check_key_metadata(content: bytes, where: str) -> bytes:
    """``content`` if it is result metadata naming ``JSON_RESULTS``, else ``UnsafeResultError``."""
    try:
        metadata = json.loads(content)
    except ValueError:
        raise UnsafeResultError(f"{where} is not JSON result metadata") from None
    serializer = metadata.get("serializer") if isinstance(metadata, dict) else None
    if serializer != _ACCEPTED:
        raise UnsafeResultError(f"{where} does not name qgen's JSON results (serializer {serializer!r})")
    return content


class CheckedKeyStorage(LocalFileSystem):
    """Cache-key metadata under the current PREFECT_LOCAL_STORAGE_PATH (``KEYS_FOLDER``; another
    ``basepath`` if given), read back only when it names ``JSON_RESULTS`` (``check_key_metadata``)."""

    _block_type_name = "qgen Checked Key Storage"

    def _resolve_path(self, path: str) -> Path:
        if self.basepath is None:
            from prefect.settings import get_current_settings

            root = Path(get_current_settings().results.local_storage_path) / KEYS_FOLDER
            return LocalFileSystem(basepath=str(root))._resolve_path(path)
        return super()._resolve_path(path)

    async def aread_path(self, path: str) -> bytes:
        return check_key_metadata(await super().aread_path(path), path)

    def read_path(self, path: str, **_: Any) -> bytes:  # type: ignore[override]
        return check_key_metadata(LocalFileSystem.read_path(self, path, _sync=True), path)


def json_results(cache_policy: CachePolicy = DEFAULT) -> dict[str, Any]:
    """``@task`` options: results as plain JSON, cached under ``cache_policy`` with checked keys."""
    return {"result_serializer": JSON_RESULTS, "cache_policy": cache_policy.configure(key_storage=CheckedKeyStorage())}


def plain(value: Any) -> Any:
    """``value`` as plain JSON types (paths as strings, dataclasses as dicts, numpy/torch scalars as numbers)."""
    return json.loads(json.dumps(value, default=_plain_default))


def _plain_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if hasattr(value, "item") and callable(value.item):  # numpy and torch scalars
        return value.item()
    raise TypeError(f"a task result must be plain JSON, got {type(value).__name__}")
