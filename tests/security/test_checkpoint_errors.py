"""Files that are not checkpoints, and logical forms that cannot be read: one ``error:`` line on stderr
and a non-zero exit, never torch's advice to load with ``weights_only=False`` (issue 17)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

import pytest
import torch

Qgen = Callable[..., "tuple[int, str, str]"]
LF = "SELECT ?x WHERE { ns:m.0a ns:location.country.capital ?x }"


def empty(path: Path) -> None:
    path.write_bytes(b"")


def foreign_object(path: Path) -> None:
    torch.save({"settings": argparse.Namespace(lr=0.1)}, path)  # loads only with weights_only=False


def truncated(path: Path) -> None:
    torch.save({"model": torch.zeros(64)}, path)
    path.write_bytes(path.read_bytes()[:200])


def text(path: Path) -> None:
    path.write_text("not a model\n")


def other_tensors(path: Path) -> None:
    torch.save({"weight": torch.zeros(2)}, path)


@pytest.mark.parametrize("make", [empty, foreign_object, truncated, text, other_tensors])
def test_a_file_that_is_not_a_checkpoint_gets_one_clear_line(make: Callable[[Path], None], qgen: Qgen,
                                                              tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    make(path)
    code, out, err = qgen("generate", "--checkpoint", path, LF)
    assert code == 1 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: CheckpointError: {path} is not a qgen checkpoint ("), err
    assert "weights_only" not in err and "Abort" not in err


def test_generate_reports_a_refused_query_on_stderr_and_exits_1(qgen: Qgen, tiny_checkpoint: Path,
                                                                tmp_path: Path) -> None:
    update = "INSERT DATA { <http://example.org/a> <http://example.org/b> <http://example.org/c> }"
    code, out, err = qgen("generate", "--checkpoint", tiny_checkpoint, update)
    assert code == 1 and not out
    assert err.strip().startswith("error: UnsupportedQueryError: SPARQL Update (INSERT) is refused"), err
    lfs = tmp_path / "lfs.txt"
    lfs.write_text(f"{LF}\n{update}\n")
    code, out, err = qgen("generate", "--checkpoint", tiny_checkpoint, "--name", "m.0a=Oslo", "--file", lfs)
    assert code == 1  # the good one still gets its question
    assert len(out.strip().splitlines()) == 1 and "\t" in out
    assert len(err.strip().splitlines()) == 1 and "UnsupportedQueryError" in err
    code, out, err = qgen("generate", "--checkpoint", tiny_checkpoint, "--json", "--file", lfs)
    assert code == 1 and [line.startswith('{"id": "line-') for line in out.strip().splitlines()] == [True, True]
    assert '"error"' in out.strip().splitlines()[1] and "UnsupportedQueryError" in err


def test_generate_refuses_a_logical_form_longer_than_the_model_reads(qgen: Qgen, tiny_checkpoint: Path,
                                                                    tmp_path: Path) -> None:
    """Not cut silently (its question would leave the rest out with no warning): refused as synthesis does."""
    long = "SELECT ?x WHERE { " + " ".join(f"?x <http://example.org/p{i}> ?y{i} ." for i in range(150)) + " }"
    code, out, err = qgen("generate", "--checkpoint", tiny_checkpoint, long)
    assert code == 1 and not out
    assert err.strip().startswith("error: InputTooLong: ") and "more than max_src_len 400" in err, err
    lfs = tmp_path / "lfs.txt"
    lfs.write_text(f"{long}\n{LF}\n")
    code, out, err = qgen("generate", "--checkpoint", tiny_checkpoint, "--name", "m.0a=Oslo", "--file", lfs)
    assert code == 1 and len(out.strip().splitlines()) == 1  # the short one still gets its question
    assert err.strip().startswith("error: line 1: InputTooLong: "), err

def test_generate_usage_errors_exit_2(qgen: Qgen, tiny_checkpoint: Path, tmp_path: Path) -> None:
    code, out, err = qgen("generate", "--checkpoint", tiny_checkpoint, "--beam", "2", "--num-return", "3", LF)
    assert code == 2 and not out and err.strip() == "error: --num-return (3) must be between 1 and --beam (2)"
    code, _, err = qgen("generate", "--checkpoint", tiny_checkpoint, "--lf-type", "cypher", LF)
    assert code == 2 and err.startswith("error: --lf-type must be one of sparql, sql, mr, da")
    code, _, err = qgen("generate", "--checkpoint", tiny_checkpoint, "--bogus", LF)
    assert code == 2 and "No such option" in err
    code, _, err = qgen("generate", "--checkpoint", tiny_checkpoint, "--file", "lfs.txt", LF)
    assert code == 2 and err.strip() == "error: give a logical form or --file, not both"
    code, _, err = qgen("generate", "--checkpoint", tiny_checkpoint, " ")
    assert code == 2 and err.startswith("error: the logical form is empty")
    lfs = tmp_path / "queries.jsonl"  # a file given where a query goes: the fix is named
    lfs.write_text(f'{{"id": "1", "lf": "{LF}"}}\n')
    code, out, err = qgen("generate", "--checkpoint", tiny_checkpoint, lfs)
    assert code == 2 and not out and err.strip() == f"error: {lfs} is a file, not a logical form: give it as --file {lfs}"
    from qgen.cli import _names_a_file

    assert not _names_a_file("SELECT x FROM t WHERE " + " AND ".join(f"c{i} = 'v{i}'" for i in range(30)))  # > 255 bytes
    assert not _names_a_file("SELECT ?x WHERE { ?x <http://a/b> \"\x00\" }") and _names_a_file(f" {lfs} ")
    for pair in ("m.0a=", "=Oslo", "m.0a"):
        code, _, err = qgen("generate", "--checkpoint", tiny_checkpoint, "--name", pair, LF)
        assert code == 2 and err.strip() == f"error: --name expects ID=NAME, got {pair!r}", err
    code, _, err = qgen("synthesize", "--checkpoint", tiny_checkpoint, "--out", "unused")
    assert code == 2 and err.strip() == ("error: give exactly one of --from-file, --from-graph, --from-endpoint, "
                                         "--from-tables")


def _empty_source_vocabulary(folder: Path) -> None:
    (folder / "src_vocab.json").write_text("[]\n")


def _special_tokens_only(folder: Path) -> None:
    """A model trained on nothing: its vocabularies hold the special tokens alone, as its configuration says."""
    import json

    manifest = json.loads((folder / "qgen-model.json").read_text())
    manifest["config"]["src_vocab_size"] = 4
    (folder / "qgen-model.json").write_text(json.dumps(manifest))
    specials = json.loads((folder / "src_vocab.json").read_text())[:4]
    (folder / "src_vocab.json").write_text(json.dumps(specials))


def _truncated_weights(folder: Path) -> None:
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])


def _weights_of_another_size(folder: Path) -> None:
    import json

    manifest = json.loads((folder / "qgen-model.json").read_text())
    manifest["config"]["hidden_size"] *= 2
    (folder / "qgen-model.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("damage, says", [
    (_empty_source_vocabulary, "is not a usable qgen model (its src_vocab holds 0 tokens, its configuration says"),
    (_special_tokens_only, "is not a usable qgen model (its src_vocab is empty (the special tokens only))"),
    (_truncated_weights, "is not a readable qgen model folder (SafetensorError: "),
    (_weights_of_another_size, "is not a usable qgen model (Error(s) in loading state_dict"),
])
def test_a_damaged_model_folder_is_one_line(damage: Callable[[Path], None], says: str, qgen: Qgen,
                                            tiny_checkpoint: Path, tmp_path: Path) -> None:
    """A model folder whose parts disagree is refused, never run with an empty vocabulary (nonsense) or
    stopped by a bare torch or safetensors error."""
    from qgen.exported_model import export_model

    folder = export_model(tiny_checkpoint, tmp_path / "model")
    damage(folder)
    code, out, err = qgen("generate", "--model", folder, LF)
    assert code == 1 and not out and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: CheckpointError: {folder} {says}"), err


def test_generate_names_the_record_a_reader_refused(qgen: Qgen, tiny_checkpoint: Path, tmp_path: Path) -> None:
    """By its id (or line), as a tokenizer error is named: several bad records must be told apart."""
    lfs = tmp_path / "lfs.jsonl"
    lfs.write_text(f'{{"id": "good", "lf": "{LF}"}}\nnot json\n{{"id": "x3"}}\n')
    code, out, err = qgen("generate", "--checkpoint", tiny_checkpoint, "--name", "m.0a=Oslo", "--file", lfs)
    assert code == 1 and len(out.strip().splitlines()) == 1
    assert err.strip().splitlines() == ["error: line 2: not JSON (Expecting value at column 1)",
                                        "error: x3: line 3: no 'lf' string"], err
