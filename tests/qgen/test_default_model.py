"""The default model that ships in qgen/models/default: safe to load, small, carded, and it generates."""
from __future__ import annotations

import json

from qgen.exported_model import MANIFEST, is_exported


def test_the_shipped_default_model_loads_without_pickle_and_generates() -> None:
    from qgen.exported_model import DEFAULT_MODEL
    from qgen.generate import generate_questions

    assert is_exported(DEFAULT_MODEL), "qgen/models/default ships with qgen"
    size = sum(p.stat().st_size for p in DEFAULT_MODEL.rglob("*") if p.is_file())
    assert size <= 25 * 2**20, f"the default model is {size / 2**20:.1f} MiB (at most 25)"
    manifest = json.loads((DEFAULT_MODEL / MANIFEST).read_text())
    assert manifest["lf_types"] == ["sparql", "sql"] and manifest["metrics"]["metrics"]["webqsp"]["bleu"] > 0
    assert "python benchmarks/default_model.py" in (DEFAULT_MODEL / "README.md").read_text()
    [sparql] = generate_questions(["SELECT ?x WHERE { ns:m.0d3k14 ns:people.person.place_of_birth ?x }"], "default",
                                  lf_type="sparql", beam=2)
    [sql] = generate_questions(["SELECT \"Position\" FROM \"table\" WHERE \"Player\" = 'John Smith'"], "default",
                               lf_type="sql", beam=2)
    for result in (sparql, sql):
        question, score = result["questions"][0]
        assert question.split() and -10.0 < score <= 0.0
    assert "john smith" in sql["questions"][0][0]  # the name, copied


def test_the_default_model_reads_a_dbpedia_style_query() -> None:
    """Short relation names under a prefix (DBpedia, schema.org) are words it reads, not noise to copy."""
    from qgen.generate import generate_questions

    [result] = generate_questions(["SELECT ?x WHERE { dbr:Berlin dbo:leader ?x }"], "default", lf_type="sparql", beam=4)
    words = result["questions"][0][0].split()
    assert {"leader", "berlin"} <= set(words) and "dbo" not in words, words


def test_generate_puts_the_questions_that_pass_the_checks_first() -> None:
    """The shipped model's best-scored question for `points < 20` says "larger than 20"; with the checks
    (the default) a question of the right direction leads, and one that fails a check says what it fails."""
    from qgen.generate import generate_questions

    lf = "SELECT name FROM players WHERE points < 20"
    [plain] = generate_questions([lf], "default", lf_type="sql", beam=4, num_return=4, checks=False)
    [checked] = generate_questions([lf], "default", lf_type="sql", beam=4, num_return=4)
    assert "larger" in plain["questions"][0][0].split() and "failures" not in plain
    assert sorted(checked["questions"]) == sorted(plain["questions"])  # the same beam, ranked anew
    first = checked["questions"][0][0].split()
    assert "smaller" in first or "less" in first, checked
    assert all("comparison" not in f for f in checked["failures"][0])
    wrong = [failed for (question, _), failed in zip(checked["questions"], checked["failures"])
             if "larger" in question.split()]
    assert wrong and all("comparison < stated in the other direction" in failed for failed in wrong)


def test_generate_shows_the_question_synthesis_writes_whatever_num_return(tmp_path) -> None:
    """With the checks, ``generate`` ranks the whole beam's questions, as synthesis does: for this query the
    search that stops after one finished question misses a better-scored one that the whole beam finds."""
    import pandas as pd
    from typer.testing import CliRunner

    from qgen.cli import app
    from qgen.generate import generate_questions

    lf = "SELECT DISTINCT ?x WHERE { dbr:Lyon dbo:country ?x . }"
    firsts = {k: next(generate_questions([lf], "default", lf_type="sparql", beam=4, num_return=k))["questions"][0]
              for k in (1, 2, 4)}
    assert len(set(firsts.values())) == 1, firsts
    [plain_one] = generate_questions([lf], "default", lf_type="sparql", beam=4, num_return=1, checks=False)
    [plain_all] = generate_questions([lf], "default", lf_type="sparql", beam=4, num_return=4, checks=False)
    assert plain_one["questions"][0] != plain_all["questions"][0]  # the case in point: the early stop differs
    (tmp_path / "lyon.jsonl").write_text(json.dumps({"id": "lyon", "lf": lf, "lf_type": "sparql"}) + "\n")
    result = CliRunner().invoke(app, ["synthesize", "--checkpoint", "default", "--out", str(tmp_path / "corpus"),
                                      "--from-file", str(tmp_path / "lyon.jsonl"), "--no-round-trip", "-q"])
    assert result.exit_code == 0, result.output
    written = pd.read_parquet(tmp_path / "corpus" / "pairs")["question"].tolist()
    assert written == [firsts[1][0]]
