"""The RNNLG protocol for SF Hotel / SF Restaurant (qgen.metrics.wen) and ``qgen score wen``."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qgen.cli import app
from qgen.datasets.paths import ENV_VAR, datasets_dir
from qgen.metrics import wen

runner = CliRunner()
_ROOT = datasets_dir()
real_data = pytest.mark.skipif(
    _ROOT is None or not all((_ROOT / wen.TEST_DIR / d / "test.json").is_file() for d in wen.DOMAINS),
    reason=f"the Wen et al. 2015 test sets are not available (set ${ENV_VAR} to the datasets directory holding "
           "wen2015_sf/hotel/test.json and wen2015_sf/restaurant/test.json)",
)
HAS_JAVA = shutil.which("java") is not None
BANNER = "#####\n#####\n# test file\n#####\n#####\n"

# Figures: HDC (each test record's third element). The RNNLG selection of the baseline (one per
# delexicalised act) gives the protocol's published check; each record's own baseline differs a little.
RNNLG_HDC_BLEU = {"hotel": 54.06, "restaurant": 42.60}
OWN_HDC_BLEU = {"hotel": 53.98, "restaurant": 42.52}
EXACT_ACT_BLEU = {"hotel": 37.23, "restaurant": 27.11}
RNNLG_HDC_METEOR = {"hotel": 47.43, "restaurant": 42.88}
OWN_HDC_METEOR = {"hotel": 47.27, "restaurant": 43.42}


def _write_test_file(path: Path, records: list[list[str]]) -> Path:
    path.write_text(BANNER + json.dumps(records), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# The protocol's pieces


def test_normalise() -> None:
    assert wen.normalise("The Hotels are cheaply priced .") == "the hotel -s are cheap -ly priced"
    assert wen.normalise("it's near (415) 555-1234, ok?") == "it is near 4155551234 , ok ?"
    assert wen.normalise("do you want a pricey hotel ?") == "do you want a pricey hotel"
    assert wen.normalise("a 3.5 star place/venue") == "a 3.5 star place and venue"
    assert wen.normalise("there are 1 2 hotels") == "there are 12 hotel -s"


def test_parse_and_delexicalised_act() -> None:
    act = wen.parse_act("?select(area='nob hill';area=dont_care;kids_allowed=true;near)")
    assert act.act == "?select"
    assert act.slots == (("area", "nob hill"), ("area", "dontcare"), ("kidsallowed", "yes"), ("near", "?"))
    assert wen.delexicalised_act(act) == (("a", "?select"), ("area", "_1"), ("area", "dontcare"),
                                          ("kidsallowed", "yes"), ("near", "?"))
    assert wen.parse_act("goodbye()").slots == ()
    # values differ, the delexicalised form does not; the slot order does not matter either
    assert wen.delexicalised_act(wen.parse_act("inform(name='a';area=b)")) == \
        wen.delexicalised_act(wen.parse_act("inform(area='c';name=d)"))
    with pytest.raises(ValueError):
        wen.parse_act("inform name=a")


def test_delexicalise_and_lexicalise() -> None:
    act = wen.parse_act("inform(name='inn on castro';area='castro';type=hotel)")
    delex = wen.delexicalise("inn on castro is a nice hotel in castro", act)
    assert delex == "SLOT_NAME is a nice SLOT_TYPE in SLOT_AREA"  # the longest value first
    other = wen.parse_act("inform(name='hotel drisco';area='pacific heights';type=hotel)")
    assert wen.lexicalise(delex, other, "hotel") == "hotel drisco is a nice hotel in pacific heights"
    both = wen.parse_act("?select(area='nob hill and mission')")
    assert wen.delexicalise("mission or nob hill", both) == "SLOT_AREA"
    # a left-over SLOT_TYPE becomes the domain
    assert wen.lexicalise("a SLOT_TYPE near SLOT_NEAR", wen.parse_act("inform(near=x)"), "restaurant") == \
        "a restaurant near x"


def test_references_grouped_by_delexicalised_act(tmp_path) -> None:
    path = _write_test_file(tmp_path / "test.json", [
        ["inform(name='a';area='north')", "A is in the north .", "x"],
        ["inform(name='b';area='south')", "b is a place in the south", "y"],
        ["inform(name='c')", "c is nice", "z"],
    ])
    test = wen.load_test_set("hotel", path)
    assert test.references == (
        ("a is in the north", "a is a place in the north"),
        ("b is in the south", "b is a place in the south"),
        ("c is nice",),
    )


def test_bleu_rnnlg_variant() -> None:
    refs = [["a b c d e".split(), "a b c".split()]]
    assert wen.bleu_tokens(["a b c d e".split()], refs) == pytest.approx(1.0)
    # the closest reference length (3) for a 3-word output: no brevity penalty, precisions 1, 1, 1 and 0
    # -> the 4-gram precision is 1e-7, so BLEU = (1e-7) ** 0.25 (up to the 1e-7 guards)
    assert wen.bleu_tokens(["a b c".split()], refs) == pytest.approx(1e-7 ** 0.25, rel=1e-3)
    # brevity: a 4-word output is 1 word from both references; the first one (5 words) is its length
    # -> r = 5, c = 4, penalty exp(1 - 5/4); every n-gram matches
    out = "a b c d".split()
    expected = math.exp(1 - 5 / 4) * math.exp(sum(math.log(p + 1e-7) for p in (1.0, 1.0, 1.0, 1.0)) / 4)
    assert wen.bleu_tokens([out], refs) == pytest.approx(expected, rel=1e-6)
    # counts clipped to the largest count in one reference
    assert wen.bleu_tokens(["a a a".split()], [["a b c".split()]]) < 1e-3


# ---------------------------------------------------------------------------------------------
# Bad input: one typed line naming the file and the problem


@pytest.mark.parametrize(("outputs_text", "message"), [
    ("only one line\n", "1 lines but the hotel test set (test.json) has 2 records"),
    ("a\nb\nc\n", "3 lines but the hotel test set (test.json) has 2 records"),
    ("inform(name='b')\tb\ninform(name='a')\ta\n", "outputs must follow the test file's record order"),
    ("inform(name='a')\ta\textra\nb\n", "3 tab-separated columns"),
])
def test_bad_outputs_are_typed_errors(tmp_path, outputs_text, message) -> None:
    test_file = _write_test_file(tmp_path / "test.json", [
        ["inform(name='a')", "a is nice", "a is a place"], ["inform(name='b')", "b is nice", "b is a place"],
    ])
    outputs = tmp_path / "out.txt"
    outputs.write_text(outputs_text, encoding="utf-8")
    with pytest.raises(wen.WenInputError, match=str(outputs).replace("\\", "\\\\")) as raised:
        wen.score_files(outputs, "hotel", test_file=test_file, java_metrics=False)
    assert message in str(raised.value)
    result = runner.invoke(app, ["score", "wen", str(outputs), "--domain", "hotel", "--test-file", str(test_file),
                                 "--no-java"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and message in result.stderr
    assert "Traceback" not in result.output


def test_unknown_domain_and_missing_files_are_one_line_errors(tmp_path) -> None:
    outputs = tmp_path / "out.txt"
    outputs.write_text("x\n", encoding="utf-8")
    with pytest.raises(wen.WenInputError, match="unknown domain 'laptop'"):
        wen.score_files(outputs, "laptop", java_metrics=False)
    for args, message in [
        (["score", "wen", str(outputs), "--domain", "laptop", "--no-java"], "unknown domain 'laptop'"),
        (["score", "wen", str(outputs), "--domain", "hotel", "--datasets", str(tmp_path), "--no-java"],
         "test file not found"),
        (["score", "wen", str(tmp_path / "nope.txt"), "--domain", "hotel", "--test-file",
          str(_write_test_file(tmp_path / "t.json", [["goodbye()", "bye", "bye"]])), "--no-java"],
         "outputs file not found"),
        (["score", "wen", str(outputs), "--domain", "hotel", "--test-file", str(tmp_path), "--no-java"],
         f"{tmp_path}: a folder, not a test file"),  # it exists: "not found" would mislead
        (["score", "e2e", str(tmp_path), "--no-java"], f"{tmp_path}: a folder, not an outputs file"),
    ]:
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and message in result.stderr and result.stderr.count("\n") == 1, result.output


def test_malformed_test_file(tmp_path) -> None:
    bad = tmp_path / "test.json"
    bad.write_text('[["inform(name=a)", "a", "a"]]', encoding="utf-8")
    with pytest.raises(wen.WenInputError, match="comment lines"):
        wen.read_test_records(bad)
    _write_test_file(bad, [["inform(name=a)", "a"]])
    with pytest.raises(wen.WenInputError, match="record 0 is not a list of 3 strings"):
        wen.read_test_records(bad)


def test_default_test_file_follows_the_datasets_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert wen.default_test_file("restaurant") == tmp_path / "wen2015_sf" / "restaurant" / "test.json"
    assert wen.default_test_file("hotel", tmp_path / "x") == tmp_path / "x" / "wen2015_sf" / "hotel" / "test.json"


def test_cli_small_corpus(tmp_path) -> None:
    test_file = _write_test_file(tmp_path / "test.json", [
        ["inform(name='a b c')", "a b c is a nice place to stay .", "h"],
        ["inform(name='d e')", "d e is a nice place to stay", "h"],
    ])
    outputs = tmp_path / "out.txt"
    outputs.write_text("a b c is a nice place to stay\nD E is a nice place to stay .\n", encoding="utf-8")
    result = runner.invoke(app, ["score", "wen", str(outputs), "--domain", "hotel", "--test-file", str(test_file),
                                 "--no-java"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"BLEU": 100.0, "METEOR": None}
    tabbed = tmp_path / "out.tsv"
    tabbed.write_text("inform(name='a b c')\ta b c is a nice place to stay\n"
                      "inform(name='d e')\td e is a nice place to stay\n", encoding="utf-8")
    assert wen.score_files(tabbed, "hotel", test_file=test_file, java_metrics=False)["BLEU"] == pytest.approx(100.0)


# ---------------------------------------------------------------------------------------------
# Acceptance: the HDC baseline on the real test sets


@real_data
@pytest.mark.parametrize("domain", wen.DOMAINS)
def test_hdc_bleu_matches_the_rnnlg_protocol(domain, tmp_path) -> None:
    test = wen.load_test_set(domain)
    assert len(test.records) == {"hotel": 1075, "restaurant": 1039}[domain]
    hdc = wen.rnnlg_baseline_outputs(test)
    assert round(wen.bleu(hdc, test.references), 2) == RNNLG_HDC_BLEU[domain]
    own = [r.baseline for r in test.records]
    assert round(wen.bleu(own, test.references), 2) == OWN_HDC_BLEU[domain]
    exact: dict[str, list[str]] = {}
    for record in test.records:
        exact.setdefault(record.act, []).append(wen.normalise(record.utterance))
    assert round(wen.bleu(own, [exact[r.act] for r in test.records]), 2) == EXACT_ACT_BLEU[domain]
    # the command on a file of the RNNLG baseline outputs, one per line
    outputs = tmp_path / "hdc.txt"
    outputs.write_text("\n".join(hdc) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["score", "wen", str(outputs), "--domain", domain, "--no-java"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert round(figures["BLEU"], 2) == RNNLG_HDC_BLEU[domain] and figures["METEOR"] is None


@real_data
@pytest.mark.slow
@pytest.mark.skipif(not HAS_JAVA, reason="METEOR 1.5 needs Java (the jar shipped in pycocoevalcap)")
def test_hdc_meteor() -> None:
    from qgen.metrics.meteor import Meteor

    with Meteor(timeout_s=240) as scorer:  # one JVM for the four corpora
        for domain in wen.DOMAINS:
            test = wen.load_test_set(domain)
            for outputs, expected in [(wen.rnnlg_baseline_outputs(test), RNNLG_HDC_METEOR[domain]),
                                      ([r.baseline for r in test.records], OWN_HDC_METEOR[domain])]:
                measured = wen.meteor(outputs, test.references, scorer=scorer)
                assert round(measured, 2) == expected, (domain, measured)
