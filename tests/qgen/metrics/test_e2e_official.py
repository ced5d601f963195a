"""The official E2E metrics (qgen.metrics.e2e_official) and ``qgen score e2e``."""
from __future__ import annotations

import json
import math
import shutil

import pytest
from typer.testing import CliRunner

from qgen.cli import app
from qgen.datasets.paths import ENV_VAR, datasets_dir
from qgen.metrics import e2e_official as e2e

runner = CliRunner()
_ROOT = datasets_dir()
_OUTPUTS = _ROOT / "e2e" / "reference_outputs" if _ROOT is not None else None
real_data = pytest.mark.skipif(
    _ROOT is None or not (_ROOT / "e2e" / "testset_w_refs.csv").is_file()
    or not (_OUTPUTS / "tgen.tsv").is_file(),
    reason=f"the E2E test set and reference outputs are not available (set ${ENV_VAR} to the datasets directory "
           "holding e2e/testset_w_refs.csv and e2e/reference_outputs/)",
)
HAS_JAVA = shutil.which("java") is not None


def _tokens(text: str) -> list[str]:
    return text.split()


# ---------------------------------------------------------------------------------------------
# NIST on hand-computed examples


def test_nist_information_weights() -> None:
    refs = [[_tokens("a b c"), _tokens("a b d")]]
    info = e2e.nist_information(refs)
    # 6 reference words; a and b twice, c and d once.
    assert info[("a",)] == pytest.approx(math.log2(6 / 2))
    assert info[("c",)] == pytest.approx(math.log2(6 / 1))
    assert info[("a", "b")] == pytest.approx(0.0)  # count(a) / count(a b) = 2 / 2
    assert info[("b", "c")] == pytest.approx(1.0)  # count(b) / count(b c) = 2 / 1
    assert info[("a", "b", "c")] == pytest.approx(1.0)  # count(a b) / count(a b c) = 2 / 1


def test_nist_hand_computed() -> None:
    refs = [[_tokens("a b c"), _tokens("a b d")]]
    # unigrams a, b, c: (2 log2 3 + log2 6) / 3; bigrams a b, b c: (0 + 1) / 2; trigram a b c: 1 / 1;
    # no 4- or 5-grams; 3 output words against an average reference of 3: no penalty.
    expected = (2 * math.log2(3) + math.log2(6)) / 3 + 0.5 + 1.0
    assert e2e.nist_tokens([_tokens("a b c")], refs) == pytest.approx(expected)
    assert expected == pytest.approx(math.log2(3) + 11 / 6)


def test_nist_length_penalty_is_half_at_two_thirds() -> None:
    assert e2e.nist_length_penalty(2 / 3) == pytest.approx(0.5)
    assert e2e.nist_length_penalty(1.0) == 1.0 and e2e.nist_length_penalty(1.7) == 1.0
    assert e2e.nist_length_penalty(0.0) == 0.0
    refs = [[_tokens("a b c"), _tokens("a b d")]]
    # "a b": unigrams 2 log2 3 / 2, bigram a b has no information; 2 words against 3: factor 0.5.
    assert e2e.nist_tokens([_tokens("a b")], refs) == pytest.approx(0.5 * math.log2(3))
    # "a a": a is clipped to its largest count in one reference (1); "a a" matches nothing.
    assert e2e.nist_tokens([_tokens("a a")], refs) == pytest.approx(0.5 * math.log2(3) / 2)


def test_nist_reference_length_is_the_average_over_every_reference() -> None:
    # 3 references, 10 words: 10/3 per reference, 20/3 for two segments; the outputs have 6 words.
    refs = [[_tokens("a b c d"), _tokens("a b c d")], [_tokens("e f")]]
    outputs = [_tokens("a b c d"), _tokens("e f")]
    raw = (4 * math.log2(10 / 2) + 2 * math.log2(10 / 1)) / 6  # every bigram or longer carries 0 information
    expected = raw * e2e.nist_length_penalty(6 / (10 / 3 * 2))
    assert e2e.nist_tokens(outputs, refs) == pytest.approx(expected)
    assert expected < raw  # the per-segment mean (4 + 2 = 6) would give no penalty


def test_nist_over_13a_tokens_is_case_insensitive() -> None:
    refs = [["The Eagle is a pub.", "The Eagle, a pub."]]
    assert e2e.nist(["the eagle is a PUB ."], refs) == pytest.approx(e2e.nist(["The Eagle is a pub."], refs))
    assert e2e.tokenize_13a("The Eagle, a pub.") == ["the", "eagle", ",", "a", "pub", "."]


def test_bleu_multi_reference_streams() -> None:
    assert e2e.reference_streams([["x", "y"], ["z"]]) == [["x", "z"], ["y", None]]
    refs = [["the eagle is a pub near the river .", "a pub"], ["blue spice is a coffee shop in the city centre ."]]
    outputs = ["the eagle is a pub near the river .", "blue spice is a coffee shop in the city centre ."]
    assert e2e.bleu(outputs, refs) == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------
# Reading and grouping


def _write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def test_references_grouped_by_mr(tmp_path) -> None:
    refs = _write(tmp_path / "refs.csv", '"mr","ref"\n'
                  '"name[A], food[Thai]","A serves Thai food."\n'
                  '"name[A], food[Thai]","Thai food at A."\n'
                  '"name[B], area[riverside]","B is by the river."\n'
                  '"name[A], food[Thai]","A serves Thai food."\n')
    grouped = e2e.read_references(refs)
    # first-row order of the distinct MRs; every row kept, duplicates too (as e2e-metrics does)
    assert grouped.mrs == ("name[A], food[Thai]", "name[B], area[riverside]")
    assert grouped.references == (("A serves Thai food.", "Thai food at A.", "A serves Thai food."),
                                  ("B is by the river.",))
    outputs = _write(tmp_path / "out.tsv", 'MR\toutput\n"name[A], food[Thai]"\tA has Thai food.\n'
                     'name[B],  area[riverside]\t"B is by the river."\n')
    assert e2e.read_outputs(outputs, grouped) == ["A has Thai food.", "B is by the river."]


@pytest.mark.parametrize(("refs_text", "outputs_text", "message"), [
    ('"mr","ref"\n"name[A]",""\n', "MR\toutput\nname[A]\tx\n", "has no reference"),
    ('"mr","ref"\n"name[A]","x","y"\n', "MR\toutput\nname[A]\tx\n", "3 columns, the header has 2"),
    ('"mr","text"\n"name[A]","x"\n', "MR\toutput\nname[A]\tx\n", "lacks an 'mr' or a 'ref' column"),
    ('"mr","ref"\n"name[A]","x"\n', "MR\toutput\nname[A]\tx\textra\n", "3 tab-separated columns, expected 2"),
    ('"mr","ref"\n"name[A]","x"\n', "MR\toutput\nname[A]\tx\nname[B]\ty\n", "2 outputs but 1 distinct MRs"),
    ('"mr","ref"\n"name[A]","x"\n', "src\tsys\nname[A]\tx\n",  # a header of other names: said so
     "line 1, 'src', is no MR: a header line is read as one only when its first column is 'MR'"),
    ('"mr","ref"\n"name[A]","x"\n"name[B]","y"\n', "MR\toutput\nname[B]\ty\nname[A]\tx\n", "follow the reference"),
])
def test_bad_input_is_a_typed_error_naming_the_file(tmp_path, refs_text, outputs_text, message) -> None:
    refs = _write(tmp_path / "refs.csv", refs_text)
    outputs = _write(tmp_path / "out.tsv", outputs_text)
    with pytest.raises(e2e.E2EInputError, match=message) as caught:
        e2e.score_files(outputs, refs, java_metrics=False)
    assert str(tmp_path) in str(caught.value)
    result = runner.invoke(app, ["score", "e2e", str(outputs), "--refs", str(refs), "--no-java"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and message in result.stderr
    assert "Traceback" not in result.output


def test_missing_files_are_one_line_errors(tmp_path) -> None:
    refs = _write(tmp_path / "refs.csv", '"mr","ref"\n"name[A]","x"\n')
    for args in (["score", "e2e", str(tmp_path / "none.tsv"), "--refs", str(refs)],
                 ["score", "e2e", str(refs), "--refs", str(tmp_path / "none.csv")]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "not found" in result.stderr and result.stderr.count("\n") == 1
    result = runner.invoke(app, ["score", "e2e", str(refs), "--refs", str(tmp_path), "--no-java"])
    assert result.exit_code == 2 and f"{tmp_path}: a folder, not a reference file" in result.stderr


def test_default_references_follow_the_datasets_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert e2e.default_references() == tmp_path / "e2e" / "testset_w_refs.csv"
    assert e2e.default_references(tmp_path / "x") == tmp_path / "x" / "e2e" / "testset_w_refs.csv"


def test_cli_small_corpus_bleu_nist(tmp_path) -> None:
    refs = _write(tmp_path / "refs.csv", '"mr","ref"\n"name[A]","A is a pub in the city centre."\n'
                  '"name[A]","A, a pub in the centre."\n"name[B]","B serves cheap Thai food near the river."\n')
    outputs = _write(tmp_path / "out.tsv", "MR\toutput\nname[A]\tA is a pub in the city centre.\n"
                     "name[B]\tB serves cheap Thai food near the river.\n")
    result = runner.invoke(app, ["score", "e2e", str(outputs), "--refs", str(refs), "--no-java"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert list(figures) == ["BLEU", "NIST", "METEOR", "ROUGE_L", "CIDEr"]
    assert figures["BLEU"] == 1.0 and figures["NIST"] > 0 and figures["METEOR"] is None


# ---------------------------------------------------------------------------------------------
# Acceptance: the challenge's released outputs score what the official scorer prints

OFFICIAL = {
    "tgen.tsv": {"BLEU": 0.6593, "NIST": 8.6094, "METEOR": 0.4483, "ROUGE_L": 0.6850, "CIDEr": 2.2338},
    "zhang.tsv": {"BLEU": 0.6545, "NIST": 8.1840, "METEOR": 0.4392, "ROUGE_L": 0.7083, "CIDEr": 2.1012},
}


@real_data
@pytest.mark.parametrize("name", sorted(OFFICIAL))
def test_official_figures_bleu_nist(name) -> None:
    result = runner.invoke(app, ["score", "e2e", str(_OUTPUTS / name), "--no-java"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    for metric in ("BLEU", "NIST"):
        assert figures[metric] == OFFICIAL[name][metric], (metric, figures)


@real_data
@pytest.mark.slow
@pytest.mark.skipif(not HAS_JAVA, reason="METEOR, ROUGE_L and CIDEr need Java (the METEOR 1.5 and "
                                         "Stanford PTB tokenizer jars): no `java` on PATH")
@pytest.mark.parametrize("name", sorted(OFFICIAL))
def test_official_figures_all_five(name) -> None:
    result = runner.invoke(app, ["score", "e2e", str(_OUTPUTS / name)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == OFFICIAL[name]
