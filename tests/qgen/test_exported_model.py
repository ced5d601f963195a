"""Exported model folders (safetensors + JSON): written from a checkpoint, read without unpickling,
accepted wherever a checkpoint is, and the packaged default model named by ``default``."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import torch

from qgen.checkpoint import CheckpointError, file_checksum, load_checkpoint, read_payload
from qgen.decode import beam_search
from qgen.exported_model import MANIFEST, WEIGHTS, export_model, is_exported, resolve_model
from qgen.model import make_batch


@pytest.fixture(scope="module")
def exported(tiny_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    metrics = {"beam": 4, "commit": "test", "metrics": {"webqsp": {"split": "test (full)", "questions": 3,
                                                                   "bleu": 1.0, "meteor": 2.0, "rouge_l": 3.0}}}
    return export_model(tiny_checkpoint, tmp_path_factory.mktemp("exported") / "m", metrics=metrics,
                        command="python benchmarks/default_model.py ...", name="tiny")


def test_export_writes_safetensors_json_and_a_card(exported: Path) -> None:
    assert sorted(p.name for p in exported.iterdir()) == sorted(["README.md", MANIFEST, WEIGHTS, "src_vocab.json",
                                                                 "tgt_vocab.json"])
    manifest = json.loads((exported / MANIFEST).read_text())
    assert manifest["format"] == "qgen-exported-model-1" and manifest["config"]["copy"] == "extended"
    card = (exported / "README.md").read_text()
    assert "# qgen model: tiny" in card and "| webqsp | test (full) | 3 | 1.00 | 2.00 | 3.00 |" in card
    assert "python benchmarks/default_model.py ..." in card
    from safetensors.torch import load_file

    assert {t.dtype for t in load_file(str(exported / WEIGHTS)).values() if t.is_floating_point()} == {torch.float16}


def test_an_exported_folder_exported_again_keeps_its_card(exported: Path, tmp_path: Path) -> None:
    """Its epochs, validation loss, name, metrics, command and notes: it has no history to count them from."""
    again = export_model(exported, tmp_path / "again")
    first, second = (json.loads((folder / MANIFEST).read_text()) for folder in (exported, again))
    assert second == first and second["epochs"] > 0 and second["name"] == "tiny"
    assert (again / "README.md").read_text() == (exported / "README.md").read_text()


def test_loads_without_pickle_and_decodes_like_the_checkpoint(exported: Path, tiny_checkpoint: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def no_unpickling(*args, **kwargs):
        raise AssertionError("an exported model must load without unpickling")

    monkeypatch.setattr(torch, "load", no_unpickling)
    monkeypatch.setattr(pickle, "load", no_unpickling)
    model, src_vocab, tgt_vocab, payload = load_checkpoint(exported)
    monkeypatch.undo()
    reference, ref_src, ref_tgt, _ = load_checkpoint(tiny_checkpoint)
    assert src_vocab.itos == ref_src.itos and tgt_vocab.itos == ref_tgt.itos
    assert payload["config"] == read_payload(tiny_checkpoint)["config"]
    batch = make_batch([["select", "?", "x", "where", "{", "ent:", "lyon", "}"]], None, src_vocab, tgt_vocab, "extended")
    ours = beam_search(model, batch, beam=2)[0][0]
    theirs = beam_search(reference, batch, beam=2)[0][0]
    assert ours.ids == theirs.ids  # fp16 weights: the same words on this model
    assert ours.score == pytest.approx(theirs.score, abs=0.05)


def test_a_broken_folder_is_a_checkpoint_error(exported: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / MANIFEST).write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(CheckpointError, match="not a readable qgen model folder"):
        read_payload(broken)
    for name in (WEIGHTS, "src_vocab.json", "tgt_vocab.json"):
        (broken / name).write_bytes((exported / name).read_bytes())
    with pytest.raises(CheckpointError, match="no 'qgen-exported-model-1' format mark"):
        read_payload(broken)


def test_checksum_of_a_folder_changes_with_any_file(exported: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for file in exported.iterdir():
        (copy / file.name).write_bytes(file.read_bytes())
    assert file_checksum(copy) == file_checksum(exported)
    (copy / "tgt_vocab.json").write_text("[]")
    assert file_checksum(copy) != file_checksum(exported)


def test_default_names_the_packaged_model(exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import qgen.exported_model as exported_model
    from typer.testing import CliRunner

    from qgen.cli import app

    monkeypatch.setattr(exported_model, "DEFAULT_MODEL", exported)
    assert resolve_model(None) == exported == resolve_model("default")
    assert resolve_model(tmp_path / "best.pt") == tmp_path / "best.pt"
    result = CliRunner().invoke(app, ["generate", "SELECT ?x WHERE { dbr:Lyon ?p ?x }"])  # no model named
    [line] = result.output.splitlines()  # score, question and, where it fails a check, "fails: ..."
    assert result.exit_code == 0 and line.split("\t")[2:] in ([], [line[line.find("fails: "):]]), line
    monkeypatch.setattr(exported_model, "DEFAULT_MODEL", tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="default model is missing"):
        resolve_model(None)
    result = CliRunner().invoke(app, ["generate", "SELECT ?x WHERE { dbr:Lyon ?p ?x }"])
    assert result.exit_code == 2 and "--checkpoint PATH" in result.output


def test_the_cli_generates_with_an_exported_folder(exported: Path) -> None:
    from typer.testing import CliRunner

    from qgen.cli import app

    result = CliRunner().invoke(app, ["generate", "--model", str(exported), "SELECT ?x WHERE { dbr:Lyon ?p ?x }"])
    assert result.exit_code == 0, result.output
    score, question, *failed = result.output.strip().split("\t")  # a third column: the checks it fails
    assert float(score) <= 0 and question and all(f.startswith("fails: ") for f in failed)


def test_qgen_export_writes_a_folder_and_refuses_a_non_checkpoint(tiny_checkpoint: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from qgen.cli import app

    result = CliRunner().invoke(app, ["export", str(tiny_checkpoint), "--out", str(tmp_path / "m"), "--name", "mine"])
    assert result.exit_code == 0 and is_exported(tmp_path / "m"), result.output
    assert "# qgen model: mine" in (tmp_path / "m" / "README.md").read_text()
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    result = CliRunner().invoke(app, ["export", str(tmp_path / "junk.pt"), "--out", str(tmp_path / "n")])
    assert result.exit_code == 1 and "is not a qgen checkpoint" in result.output and "\n" == result.output[-1]


def test_export_replaces_an_earlier_export_and_nothing_else(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """A corpus or results folder given as --out keeps its files (its README.md is a dataset card)."""
    from typer.testing import CliRunner

    from qgen.cli import app

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "README.md").write_text("a dataset card")
    result = CliRunner().invoke(app, ["export", str(tiny_checkpoint), "--out", str(corpus)])
    assert result.exit_code == 1 and "holds other files and no exported model" in result.stderr
    assert (corpus / "README.md").read_text() == "a dataset card" and not (corpus / MANIFEST).exists()
    afile = tmp_path / "model"
    afile.write_text("")
    result = CliRunner().invoke(app, ["export", str(tiny_checkpoint), "--out", str(afile)])
    assert result.exit_code == 2 and result.stderr.strip() == f"error: --out {afile} is a file; it names the folder to write into"
    for _ in range(2):  # a second export into the same folder replaces the first
        result = CliRunner().invoke(app, ["export", str(tiny_checkpoint), "--out", str(tmp_path / "model-folder")])
        assert result.exit_code == 0 and is_exported(tmp_path / "model-folder"), result.stderr
    result = CliRunner().invoke(app, ["export", str(tmp_path / "missing.pt"), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and result.stderr.startswith(f"error: CHECKPOINT {tmp_path / 'missing.pt'}: no such file")
