"""files.read_logical_forms: JSON Lines and Parquet, bad rows as load_error records, dataset names."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qgen.samplers.files import read_logical_forms

GOOD_SPARQL = "SELECT ?x WHERE { <http://rdf.freebase.com/ns/m.0kp1> <http://rdf.freebase.com/ns/p.q> ?x }"


def test_jsonl_good_and_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "forms.jsonl"
    lines = [
        json.dumps({"id": "a", "lf": GOOD_SPARQL, "lf_type": "sparql", "names": {"m.0kp1": "Ada Varro"}}),
        "{not json",
        json.dumps({"id": "c", "lf_type": "sql"}),
        json.dumps({"id": "d", "lf": "SELECT 1"}),  # lf_type from the argument
    ]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    records = list(read_logical_forms(path, lf_type="sql"))
    assert [r.id for r in records] == ["a", "line-2", "c", "d"]  # no id: the line number
    assert records[0].names == {"m.0kp1": "Ada Varro"} and records[0].load_error is None
    assert records[1].load_error and records[2].load_error and records[1].raw == "{not json"
    assert records[3].lf_type == "sql" and records[3].load_error is None


def test_parquet_same_columns_bad_rows_become_load_errors(tmp_path: Path) -> None:
    path = tmp_path / "forms.parquet"
    table = pa.table({
        "id": ["a", "b", None, "d", "e"],
        "lf": [GOOD_SPARQL, "SELECT 1", "SELECT 2", None, GOOD_SPARQL],
        "lf_type": ["sparql", None, "sql", "sql", "cypher"],
        "names": pa.array([[("m.0kp1", "Ada Varro")], [], None, None, None],
                          type=pa.map_(pa.string(), pa.string())),
    })
    pq.write_table(table, path)
    records = list(read_logical_forms(path, lf_type="sql"))
    assert [r.id for r in records] == ["a", "b", "forms-2", "d", "e"]
    assert records[0].names == {"m.0kp1": "Ada Varro"} and records[0].lf_type == "sparql"
    assert records[1].lf_type == "sql" and records[1].load_error is None  # NULL lf_type -> the default
    assert records[2].load_error is None and records[2].logical_form == "SELECT 2"
    assert "no 'lf'" in records[3].load_error and "lf_type" in records[4].load_error
    assert json.loads(records[4].raw)["lf_type"] == "cypher"  # the row is kept for the rejects table


def test_parquet_names_as_json_text_or_struct(tmp_path: Path) -> None:
    path = tmp_path / "names.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "lf": [GOOD_SPARQL] * 2, "lf_type": ["sparql"] * 2,
                             "names": ['{"m.0kp1": "Ada Varro"}', "{broken"]}), path)
    good, bad = read_logical_forms(path)
    assert good.names == {"m.0kp1": "Ada Varro"} and "names" in bad.load_error
    struct = tmp_path / "struct.parquet"
    pq.write_table(pa.table({"id": ["a"], "lf": [GOOD_SPARQL], "lf_type": ["sparql"],
                             "names": [{"m.0kp1": "Ada Varro"}]}), struct)
    assert next(read_logical_forms(struct)).names == {"m.0kp1": "Ada Varro"}


def test_dataset_names_and_unknown_inputs(tmp_path: Path) -> None:
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"
    records = list(read_logical_forms("webqsp", data_dir=fixtures, split="test"))
    assert records and all(r.source == "webqsp" and r.lf_type == "sparql" for r in records)
    with pytest.raises(ValueError, match="forms.csv: no such file, and not a dataset name"):
        read_logical_forms(tmp_path / "forms.csv")


def test_text_one_logical_form_a_line(tmp_path: Path) -> None:
    """What `qgen generate --file` reads, `synthesize --from-file` reads too: a line, or a JSON record a line."""
    path = tmp_path / "forms.txt"
    path.write_bytes(b"SELECT ?x WHERE { ?x ns:p ns:m.02 }\n\nhello\n"
                     b'{"id": "j", "lf": "SELECT name FROM t", "names": {"a": "b"}}\n\xff oops\n')
    records = list(read_logical_forms(path, "auto"))
    assert [(r.id, r.lf_type, r.load_error is None) for r in records] == [
        ("line-1", "sparql", True), ("line-3", "", False), ("j", "sql", True), ("line-5", "", False)]
    assert records[0].logical_form == "SELECT ?x WHERE { ?x ns:p ns:m.02 }" and records[2].names == {"a": "b"}
    assert records[1].load_error.startswith("line 3: cannot tell the logical-form type of 'hello'")
    assert "not UTF-8" in records[3].load_error
    assert [r.lf_type for r in read_logical_forms(path, "sql")][:1] == ["sql"]  # a given type is every line's
