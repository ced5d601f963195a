"""``--from-graph``, ``--from-tables`` and ``--from-file`` files that cannot be read: one line naming the option, the file
and the reader's reason, exit 1 (a file that is not there: exit 2, a usage error, whatever its suffix);
never a bare parser exception or an empty corpus written with exit 0."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pandas as pd
import pytest

Qgen = Callable[..., "tuple[int, str, str]"]


@pytest.mark.parametrize("option, name, content, says", [
    ("--from-graph", "kg.ttl", b"this is not turtle <<\n", "not a readable RDF file"),
    ("--from-graph", "kg.ttl", b"", "the graph holds no triples; nothing to sample"),
    ("--from-graph", "missing.ttl", None, "no such file"),
    ("--from-tables", "t.csv", b'a,b\n"1,2\n', "not readable as CSV/Parquet tables or one SQLite database"),
    ("--from-tables", "t.csv", b"", "not readable as CSV/Parquet tables"),
    ("--from-tables", "t.db", b"not a database at all, just text\n" * 20, "not readable as CSV/Parquet tables"),
    ("--from-tables", "missing.csv", None, "no such file"),
    ("--from-tables", "notes.csv", b"name,year\n", "(NoRowsError: table notes has no rows)"),  # its type once
    # pandas would shift a ragged file's values into the wrong columns and invent a column "name.1"
    ("--from-tables", "ragged.csv", b"name,age\nann,1,extra,cols\nbob,2,x,y\n", "more fields than the header's 2"),
    ("--from-tables", "twice.csv", b"name,name,age\nann,bob,1\n", "the header repeats column 'name'"),
    ("--from-tables", "excel.csv", b"\xef\xbb\xbfname,age,name\nann,1,bob\n", "the header repeats column 'name'"),
])
def test_an_unreadable_source_is_one_line(qgen: Qgen, tiny_checkpoint: Path, tmp_path: Path, option: str,
                                          name: str, content: bytes | None, says: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    corpus = tmp_path / "corpus"
    code, out, err = qgen("synthesize", "--model", tiny_checkpoint, option, path, "--count", "3", "--out", corpus,
                          "-q")
    assert code == (2 if content is None else 1) and not out and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: {option} {path}") and says in err
    assert not (corpus / "manifest.json").exists()



@pytest.mark.parametrize("name, content", [("empty.txt", ""), ("blank.txt", "\n\n  \n"), ("empty.jsonl", ""),
                                           ("empty.parquet", None)])
def test_a_from_file_without_logical_forms_is_refused(qgen: Qgen, tiny_checkpoint: Path, tmp_path: Path, name: str,
                                                      content: str | None) -> None:
    """Not an empty corpus written with exit 0: an empty input is a mistake (the wrong file, a failed export)."""
    if content is None:  # a Parquet file with the columns and no rows
        pd.DataFrame({"id": pd.Series([], dtype=str), "lf": pd.Series([], dtype=str)}).to_parquet(tmp_path / name)
    else:
        (tmp_path / name).write_text(content)
    code, out, err = qgen("synthesize", "--model", tiny_checkpoint, "--from-file", tmp_path / name, "--out",
                          tmp_path / "corpus")
    assert code == 1 and not out and len(err.strip().splitlines()) == 1, (out, err)
    assert err.startswith(f"error: --from-file {tmp_path / name}: it holds no logical forms"), err
    assert not (tmp_path / "corpus").exists()


@pytest.mark.parametrize("name, says", [("broken.parquet", "cannot be read (ArrowInvalid: "),
                                        ("queries.parquet", "no 'lf' column (it has query, x)")])
def test_a_from_file_that_its_reader_refuses_is_one_line_naming_it(qgen: Qgen, tiny_checkpoint: Path, tmp_path: Path,
                                                                   name: str, says: str) -> None:
    """A whole-file problem: exit 1, said once (not a usage error, not one reject row a record)."""
    path = tmp_path / name
    if name == "broken.parquet":
        path.write_bytes(b"hello")
    else:
        pd.DataFrame({"query": ["SELECT a FROM t"], "x": [1]}).to_parquet(path)
    code, out, err = qgen("synthesize", "--model", tiny_checkpoint, "--from-file", path, "--out", tmp_path / "c", "-q")
    assert code == 1 and not out and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: --from-file {path}: {says}"), err
    assert not (tmp_path / "c").exists()

@pytest.mark.parametrize("name", ["missing.jsonl", "missing.parquet", "missing.txt", "missing.json"])
def test_a_missing_from_file_is_a_usage_error_whatever_its_suffix(qgen: Qgen, tiny_checkpoint: Path, tmp_path: Path,
                                                                  name: str) -> None:
    code, out, err = qgen("synthesize", "--model", tiny_checkpoint, "--from-file", tmp_path / name, "--out",
                          tmp_path / "corpus", "-q")
    assert code == 2 and not out and err.startswith(f"error: --from-file {tmp_path / name}: no such file")
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "corpus").exists()


def test_a_dataset_name_with_format_and_an_unknown_json_say_so_once(qgen: Qgen, tiny_checkpoint: Path,
                                                                    tmp_path: Path, monkeypatch) -> None:
    code, _, err = qgen("synthesize", "--model", tiny_checkpoint, "--from-file", "wikisql", "--format", "wikisql",
                        "--out", tmp_path / "c1", "-q")
    assert code == 2 and err.strip() == "error: --from-file wikisql is a dataset name; --format is for files (leave it out)"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "other.json").write_text('{"foo": [1]}')
    for command in (["generate", "--file"], ["synthesize", "--out", "c2", "-q", "--from-file"]):
        code, _, err = qgen(*command[:1], "--model", tiny_checkpoint, *command[1:], "./other.json")
        assert code == 1 and len(err.strip().splitlines()) == 1, err
        assert err.count("other.json") == 1 and "cannot detect the SPARQL JSON format" in err, err
    # serve in a process of its own: importing its flows sets up Prefect's logging in this one
    proc = subprocess.run([sys.executable, "-c", "from qgen.cli import run; run()", "serve", "--model",
                           str(tiny_checkpoint), "--from-file", "nosuch.txt", "--out", "s", "--once"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.startswith("error: --from-file nosuch.txt: no such file")


def test_a_shell_glob_after_from_tables_says_to_repeat_the_option_or_give_a_folder(qgen: Qgen, tiny_checkpoint: Path,
                                                                                  tmp_path: Path) -> None:
    """``--from-tables data/*.csv`` reaches qgen as one file after the option and the others as stray words."""
    tables = tmp_path / "tables"
    tables.mkdir()
    for name, rows in (("ferries.csv", "name,year\nann,2001\nbob,2002\ncid,2003\n"), ("ports.csv", "port,ships\nx,1\ny,2\n")):
        (tables / name).write_text(rows)
    code, out, err = qgen("synthesize", "--model", tiny_checkpoint, "--from-tables", tables / "ferries.csv",
                          tables / "ports.csv", "--out", tmp_path / "c1", "-q")
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: {tables / 'ports.csv'}: a word that no option takes") and "a folder" in err
    assert not (tmp_path / "c1").exists()

    code, out, err = qgen("synthesize", "--model", tiny_checkpoint, "--from-tables", tables, "--count", "6",
                          "--out", tmp_path / "c2", "-q")
    assert code == 0, err
    manifest = json.loads((tmp_path / "c2" / "manifest.json").read_text())
    assert manifest["counts"]["inputs"] == 6
    pairs = pd.read_parquet(tmp_path / "c2" / "pairs")
    rejects = pd.read_parquet(tmp_path / "c2" / "rejects")
    assert len(pairs) + len(rejects) == 6
    from qgen.samplers.tables import connect_tables

    tables_read = connect_tables([tables]).execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    assert sorted(name for (name,) in tables_read) == ["ferries", "ports"]  # the folder's tables, by file name

    (tmp_path / "empty").mkdir()
    code, out, err = qgen("synthesize", "--model", tiny_checkpoint, "--from-tables", tmp_path / "empty", "--out",
                          tmp_path / "c3", "-q")
    assert code == 1 and err.strip() == (f"error: --from-tables {tmp_path / 'empty'}: a folder without .csv, .tsv "
                                         "or .parquet tables"), err


def test_a_folder_of_tables_is_its_files_in_name_order(tmp_path: Path) -> None:
    from qgen.samplers.tables import table_files

    for name in ("b.parquet", "a.csv", "notes.txt", "c.TSV"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub.csv").mkdir()  # a folder named like a table is not one
    single = tmp_path / "a.csv"
    assert table_files([tmp_path, single]) == [tmp_path / "a.csv", tmp_path / "b.parquet", tmp_path / "c.TSV", single]


def test_a_sampler_that_keeps_nothing_writes_no_corpus(qgen: Qgen, tiny_checkpoint: Path, tmp_path: Path) -> None:
    """Tables of one column give no query of WikiSQL's shape: exit 1 with the sampler's counts, not an empty
    corpus marked complete with exit 0."""
    table = tmp_path / "ids.csv"
    table.write_text("id\n1\n2\n3\n")
    code, out, err = qgen("synthesize", "--model", tiny_checkpoint, "--from-tables", table, "--count", "3", "--out",
                          tmp_path / "corpus", "-q")
    assert code == 1 and not out and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: --from-tables {table}: no query could be sampled from it (") and "unsampleable" in err
    assert not (tmp_path / "corpus").exists()
    code, _, err = qgen("synthesize", "--model", tiny_checkpoint, "--from-tables", table, "--max-answers", "0",
                        "--out", tmp_path / "corpus", "-q")
    assert code == 2 and "--max-answers" in err
