"""The downstream benchmark end to end on the WikiSQL fixture (tiny models), and its value-pool sampler."""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from qgen.datasets.registry import load_dataset
from qgen.datasets.wikisql import wikisql_headers
from qgen.downstream import (DownstreamConfig, _by_size, _command, _finetuning, _row_training_set, candidate_pairs,
                             load_splits, run_downstream)
from qgen.parse import Parser, evaluate_parser_file
from qgen.samplers import SamplerStats
from qgen.samplers.wikisql_pool import ValuePool, sample_queries
from qgen.synth.round_trip import RoundTripFilter, RoundTripSetupError
from qgen.table_context import SCHEMA_MARK, TABLE_HEADER

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"
TINY = DownstreamConfig(low_fraction=0.5, synthetic=12, curve=(6,), hidden=16, embedding=8, generator_epochs=1,
                        parser_epochs=1, max_seconds=None, generator_beam=2)


def test_value_pool_draws_distinct_queries_from_the_given_conditions_only() -> None:
    examples = list(load_dataset("wikisql", FIXTURES, "test"))
    pool = ValuePool.from_examples(examples, wikisql_headers(FIXTURES))
    given = {(json.loads(e.raw)["table_id"], tuple(c[:2]), str(c[2]))
             for e in examples for c in json.loads(e.raw)["sql"]["conds"]}
    stats = SamplerStats()
    drawn = list(sample_queries(pool, 8, seed=3, stats=stats))
    assert drawn and len({r.logical_form for r in drawn}) == len(drawn)
    for record in drawn:
        raw = json.loads(record.raw)
        sql = raw["sql"]
        assert sql["sel"] not in [c[0] for c in sql["conds"]]
        assert all((raw["table_id"], tuple(c[:2]), str(c[2])) in given for c in sql["conds"])
    assert stats.kept == len(drawn) and stats.drawn == stats.kept + stats.unsampleable + stats.duplicates + stats.errors
    with pytest.raises(ValueError, match="value pool is empty"):
        list(sample_queries(ValuePool([]), 3))


def test_downstream_rows_report_and_settings(tmp_path: Path) -> None:
    work, results = tmp_path / "work", tmp_path / "results"
    metrics = run_downstream(tmp_path / "prep", work, results, TINY, FIXTURES, log=lambda line: None)
    em = metrics["dev_lf_em"]
    expected = {"low", "low_synthetic_unfiltered", "low_synthetic_overcopy", "low_synthetic_round_trip",
                "low_synthetic_round_trip_score", "low_synthetic_round_trip_token", "low_synthetic_round_trip_exact",
                "low_synthetic_both", "curve_6", "full"}
    assert set(em) == expected and all(0.0 <= v <= 1.0 for v in em.values())
    assert set(metrics["dev_parts"]) == expected  # sel, agg and conditions apart, per row
    assert set(metrics["dev_parts"]["low"]) == {"examples", "sel", "agg", "where_columns_operators", "where"}
    assert metrics["synthetic_pairs"]["drawn"] <= 12
    assert metrics["train_pairs"]["full"] > metrics["train_pairs"]["low"]
    assert metrics["train_pairs"]["low_synthetic_unfiltered"] == (
        metrics["train_pairs"]["low"] + metrics["synthetic_pairs"]["low_synthetic_unfiltered"])
    assert 0.0 <= metrics["audit_pass_rate"]["low_real_questions"] <= 1.0
    saved = json.loads((results / "downstream" / "wikisql" / "metrics.json").read_text())
    assert saved["dev_lf_em"] == em and "qgen downstream wikisql" in saved["command"]
    readme = (results / "downstream" / "wikisql" / "README.md").read_text()
    assert "| low_synthetic_both |" in readme and "| full |" in readme
    assert set(json.loads((work / "timings.json").read_text())) >= {"generator", "low", "generate", "round_trip_exact"}
    candidates = [json.loads(line) for line in (work / "synthetic.jsonl").read_text().splitlines()]
    assert all(c["header"] for c in candidates)  # each drawn form keeps its table's header
    # a synthetic pair reaches the parser as question + its table's header (a candidate written here:
    # the tiny generator's questions may all be empty, and so rejected)
    splits, other = load_splits(tmp_path / "prep", TINY, FIXTURES), tmp_path / "other"
    other.mkdir()
    (other / "synthetic.jsonl").write_text(json.dumps({"id": "s1", "question": "who wears 42 ?", "header": ["Player", "No."],
                                                       "lf_tokens": ["select", "player"], "overcopy_keep": True}) + "\n")
    (synthetic,) = _row_training_set("low_synthetic_unfiltered", splits, other, TINY)[len(splits.low):]
    assert synthetic.src == ["who", "wears", "42", "?", SCHEMA_MARK, "<col>", "player", "<col>", "no", "."]
    assert synthetic.tgt == ["select", "player"]
    # a curve row applies ``curve_filter``'s rule to the first n candidates
    verdicts = [(True, False), (False, True), (True, True)]  # (score_keep, overcopy_keep) of s1, s2, s3
    (other / "synthetic.jsonl").write_text("".join(json.dumps(
        {"id": f"s{i}", "question": "who ?", "header": ["Player"], "lf_tokens": ["select", "player"],
         "score_keep": score, "overcopy_keep": overcopy}) + "\n" for i, (score, overcopy) in enumerate(verdicts, 1)))
    by_score = replace(TINY, curve_filter="low_synthetic_round_trip_score")
    assert [p.id for p in _row_training_set("curve_2", splits, other, by_score)[len(splits.low):]] == ["s1"]
    assert [p.id for p in _row_training_set("curve_3", splits, other, replace(TINY, curve_filter="low_synthetic_overcopy"))
            [len(splits.low):]] == ["s2", "s3"]
    with pytest.raises(ValueError, match="curve_filter must be one of"):
        replace(TINY, curve_filter="score")
    parser = work / "rows" / "low" / "best.pt"  # reads question + table header, so synthesis cannot use it
    assert Parser.load(parser).input_context == TABLE_HEADER and SCHEMA_MARK in Parser.load(parser).src_vocab.stoi
    with pytest.raises(RoundTripSetupError, match="reads each question with its table header"):
        RoundTripFilter(parser).check_compatible(["sql"])
    with pytest.raises(ValueError, match="reads each question with its table header"):
        evaluate_parser_file(parser, tmp_path / "prep" / "dev.parquet", tmp_path / "eval")
    again = run_downstream(tmp_path / "prep", work, results, TINY, FIXTURES,
                           rows=["low_seed7", "finetune_low_synthetic_unfiltered",
                                 "finetune_clean_low_synthetic_unfiltered"], log=lambda line: None)
    assert set(again["dev_lf_em_by_parser_seed"]["low"]) == {"1", "7"}  # the spread of one row over parser seeds
    # pre-trained on low + synthetic, then trained on the low labels alone
    assert again["train_pairs"]["finetune_low_synthetic_unfiltered"] == again["train_pairs"]["low"]
    payload = torch.load(work / "rows" / "finetune_low_synthetic_unfiltered" / "best.pt", weights_only=True)
    assert payload["train_config"]["init_from"] == str(work / "rows" / "low_synthetic_unfiltered" / "best.pt")
    # fine-tuned on the low labels plus the synthetic pairs that the exact rule keeps
    exact_kept = sum(json.loads(line)["exact_keep"] for line in (work / "synthetic.jsonl").read_text().splitlines())
    assert again["train_pairs"]["finetune_clean_low_synthetic_unfiltered"] == again["train_pairs"]["low"] + exact_kept
    clean = torch.load(work / "rows" / "finetune_clean_low_synthetic_unfiltered" / "best.pt", weights_only=True)
    assert clean["train_config"]["init_from"] == payload["train_config"]["init_from"]
    with pytest.raises(ValueError, match="run that row first"):
        run_downstream(tmp_path / "prep", work, results, TINY, FIXTURES, rows=["finetune_curve_99"],
                       log=lambda line: None)
    # a soup: the weight average of a fine-tuning row's parsers over its seeds (two at least)
    with pytest.raises(ValueError, match="run at least two"):
        run_downstream(tmp_path / "prep", work, results, TINY, FIXTURES,
                       rows=["soup_finetune_low_synthetic_unfiltered"], log=lambda line: None)
    souped = run_downstream(tmp_path / "prep", work, results, TINY, FIXTURES,
                            rows=["finetune_low_synthetic_unfiltered_seed2", "soup_finetune_low_synthetic_unfiltered"],
                            log=lambda line: None)
    soup_dir = work / "rows" / "soup_finetune_low_synthetic_unfiltered"
    assert json.loads((soup_dir / "result.json").read_text())["soup_of"] == [
        "finetune_low_synthetic_unfiltered", "finetune_low_synthetic_unfiltered_seed2"]
    assert 0.0 <= souped["dev_lf_em"]["soup_finetune_low_synthetic_unfiltered"] <= 1.0
    seeds = [torch.load(work / "rows" / name / "best.pt", weights_only=True)["model"]
             for name in ("finetune_low_synthetic_unfiltered", "finetune_low_synthetic_unfiltered_seed2")]
    soup = torch.load(soup_dir / "best.pt", weights_only=True)["model"]
    assert all(torch.allclose(soup[k], (seeds[0][k] + seeds[1][k]) / 2) for k in soup)
    assert "| soup_finetune_low_synthetic_unfiltered | " in (results / "downstream" / "wikisql" / "README.md").read_text()
    assert "| low | 1: " in (results / "downstream" / "wikisql" / "README.md").read_text()
    with pytest.raises(ValueError, match="other settings"):  # never mixes two configurations in one table
        run_downstream(tmp_path / "prep", work, results, DownstreamConfig(**{**TINY.__dict__, "hidden": 32}), FIXTURES,
                       rows=["low"], log=lambda line: None)
    # a second round: the fine-tuned parser judges the same candidates again in another work folder
    second, judge = tmp_path / "second", work / "rows" / "finetune_low_synthetic_unfiltered" / "best.pt"
    (second / "rows").mkdir(parents=True)
    shutil.copytree(work / "generator", second / "generator")
    shutil.copytree(work / "rows" / "low", second / "rows" / "low")
    candidates = [{"id": f"s{n}", "question": f"who wears {n} ?", "header": ["Player", "No."],  # as round one left them
                   "logical_form": f"SELECT \"Player\" FROM \"table\" WHERE \"No.\" = '{n}'",
                   "lf_tokens": ["select", "player", "from", "table", "where", "no", ".", "=", "'", str(n), "'"],
                   "overcopy_keep": True, "judged_by": 1} for n in (7, 23, 42)]
    (second / "synthetic.jsonl").write_text("".join(json.dumps(c) + "\n" for c in candidates))
    round_two = replace(TINY, judge_with=str(judge), round_trip_k=1)  # the best parse alone
    again = run_downstream(tmp_path / "prep", second, tmp_path / "results2", round_two, FIXTURES,
                           rows=["low_synthetic_round_trip_score"], log=lambda line: None)
    judged = [json.loads(line) for line in (second / "synthetic.jsonl").read_text().splitlines()]
    assert {c["judged_with"] for c in judged} == {str(judge)} and "generator" not in again["seconds"]
    assert [c["question"] for c in judged] == [c["question"] for c in candidates]  # the same questions
    assert all(isinstance(c["score_score"], float) and "score_keep" in c for c in judged)
    assert "round_trip" in torch.load(second / "judge" / "best.pt", weights_only=True)
    assert "round_trip" not in torch.load(judge, weights_only=True)  # the earlier run's checkpoint is untouched
    assert f"--judge-with {judge}" in again["command"]
    assert "a second round" in (tmp_path / "results2" / "downstream" / "wikisql" / "README.md").read_text()
    # the exact rule among the judge's K best parses: the candidates are judged again, and what the
    # top parse keeps, the K best keep too
    third = tmp_path / "third"
    (third / "rows").mkdir(parents=True)
    shutil.copytree(work / "generator", third / "generator")
    shutil.copytree(work / "rows" / "low", third / "rows" / "low")
    (third / "synthetic.jsonl").write_text((second / "synthetic.jsonl").read_text())
    among_three = run_downstream(tmp_path / "prep", third, tmp_path / "results3", replace(round_two, round_trip_k=3),
                                 FIXTURES, rows=["low_synthetic_round_trip_score"], log=lambda line: None)
    rejudged = [json.loads(line) for line in (third / "synthetic.jsonl").read_text().splitlines()]
    assert {c["judged_k"] for c in rejudged} == {3} and {c.get("judged_k", 1) for c in judged} == {1}
    assert all(c3["exact_keep"] for c1, c3 in zip(judged, rejudged) if c1["exact_keep"])
    assert "--round-trip-k 3" in among_three["command"]
    assert "among the parser's 3 best parses" in (tmp_path / "results3" / "downstream" / "wikisql" / "README.md").read_text()
    with pytest.raises(ValueError, match="round_trip_k"):
        replace(TINY, round_trip_k=0)
    for bad, message in [(tmp_path / "none.pt", "no parser checkpoint"),
                         (work / "generator" / "best.pt", "is not a parser")]:
        with pytest.raises(ValueError, match=message):
            run_downstream(tmp_path / "prep", tmp_path / f"bad-{bad.stem}", results, replace(TINY, judge_with=str(bad)),
                           FIXTURES, rows=["low_synthetic_unfiltered"], log=lambda line: None)


def test_several_questions_per_logical_form_sit_side_by_side() -> None:
    from qgen.synth.schema import PairRow

    lf = 'SELECT "Player" FROM "table" WHERE "No." = \'42\''
    tokens = ["select", "player", "from", "table", "where", "no", ".", "=", "'", "42", "'"]
    pairs = [PairRow(i, "sql", lf, tokens, "who wears 42 ?", -0.1, 0, 0.5) for i in ("s1", "s2")]
    others = {"s1": [("which player wears 42 ?", -0.2), ("who is the player wearing no . 42 ?", -0.3)]}
    header = {"s1": ["Player", "No."], "s2": ["Player", "No."]}
    two = candidate_pairs(pairs, others, 2, header)
    assert [(c["id"], c["question"], c["score"]) for c in two] == [
        ("s1", "who wears 42 ?", -0.1), ("s1#2", "which player wears 42 ?", -0.2), ("s2", "who wears 42 ?", -0.1)]
    assert all(c["header"] == ["Player", "No."] and c["lf_tokens"] == tokens and c["overcopy_keep"] for c in two)
    assert [c["id"] for c in candidate_pairs(pairs, others, 1, header)] == ["s1", "s2"]
    with pytest.raises(ValueError, match="questions_per_lf must be between 1 and generator_candidates"):
        DownstreamConfig(questions_per_lf=3, generator_candidates=2)
    with pytest.raises(ValueError, match="temperature"):
        DownstreamConfig(generator_sampling=-0.5)
    assert "--generator-sampling 0.7" in _command(DownstreamConfig(generator_sampling=0.7, generator_candidates=8))
    rows = ["finetune_curve_12000", "curve_12000", "curve_6000", "finetune_curve_6000"]  # the README's order
    assert sorted(rows, key=_by_size) == ["curve_6000", "curve_12000", "finetune_curve_6000", "finetune_curve_12000"]


def _webqsp_folder(root: Path) -> Path:
    """A WebQSP folder whose questions share relations in several shapes (siblings and brothers), so
    that topics swapped among them make new queries."""
    people = ["ada lovelace", "alan turing", "grace hopper", "edsger dijkstra", "barbara liskov", "donald knuth",
              "john backus", "frances allen", "ken thompson", "dennis ritchie", "niklaus wirth", "tony hoare"]
    shapes = [("who are {name} 's siblings ?", "FILTER (?x != ns:{mid}) ns:{mid} ns:people.person.sibling_s ?y . "
                                               "?y ns:people.sibling_relationship.sibling ?x ."),
              ("who are {name} 's brothers ?", "FILTER (?x != ns:{mid}) ns:{mid} ns:people.person.sibling_s ?y . "
                                               "?y ns:people.sibling_relationship.sibling ?x . "
                                               "?x ns:people.person.gender ns:m.05zppz ."),
              ("where was {name} born ?", "ns:{mid} ns:people.person.place_of_birth ?x .")]

    def questions(split: str, names: list[str], offset: int) -> dict:
        out = []
        for i, name in enumerate(names):
            question, body = shapes[i % 3]
            mid, qid = f"m.0t{offset + i:02d}", f"WebQ{split}-{offset + i}"
            sparql = f"PREFIX ns: <http://rdf.freebase.com/ns/>\nSELECT DISTINCT ?x WHERE {{ {body.format(mid=mid)} }}"
            out.append({"QuestionId": qid, "RawQuestion": question.format(name=name),
                        "ProcessedQuestion": question.format(name=name),
                        "Parses": [{"ParseId": f"{qid}.P0", "Sparql": sparql, "TopicEntityMid": mid,
                                    "TopicEntityName": name.title(), "PotentialTopicEntityMention": name,
                                    "Constraints": [], "Answers": [{"AnswerType": "Value", "AnswerArgument": "x",
                                                                    "EntityName": None}]}]})
        return {"Version": "1.0", "Questions": out}

    folder = root / "webqsp"
    folder.mkdir(parents=True)
    (folder / "WebQSP.train.json").write_text(json.dumps(questions("Trn", people, 0)))
    (folder / "WebQSP.test.json").write_text(json.dumps(questions("Test", people[:4], 50)))
    return root


def test_webqsp_downstream_swaps_topics_among_the_low_queries(tmp_path: Path) -> None:
    data = _webqsp_folder(tmp_path / "data")
    work, results = tmp_path / "work", tmp_path / "results"
    # a generator trained long enough on the 9 low pairs to write non-empty questions; parsers kept at
    # their best validation exact match
    cfg = DownstreamConfig(**{**TINY.__dict__, "dataset": "webqsp", "low_fraction": 0.9, "generator_epochs": 40,
                              "parser_epochs": 2, "select_on": "accuracy"})
    metrics = run_downstream(tmp_path / "prep", work, results, cfg, data,
                             rows=["low", "low_synthetic_unfiltered", "low_synthetic_round_trip_token", "full"],
                             log=lambda line: None)
    assert metrics["synthetic_pairs"]["drawn"] > 0 and metrics["round_trip_default_rule"] == "token"
    assert metrics["train_pairs"]["low_synthetic_unfiltered"] == (
        metrics["train_pairs"]["low"] + metrics["synthetic_pairs"]["low_synthetic_unfiltered"])
    assert all(0.0 <= v <= 1.0 for v in metrics["dev_lf_em"].values())
    candidates = [json.loads(line) for line in (work / "synthetic.jsonl").read_text().splitlines()]
    low_forms = {p.id: p for p in load_splits(tmp_path / "prep", cfg, data).low}
    for c in candidates:  # another low query's topic, in a query that is no low query
        seed_id = c["id"].split("~")[0]
        assert seed_id in low_forms and c["header"] is None and c["lf_tokens"] != low_forms[seed_id].src
    done = json.loads((work / "rows" / "full" / "done.json").read_text())
    selection = json.loads((work / "rows" / "full" / "selection.json").read_text())
    assert done["selected_on"] == "validation accuracy" and done["epochs_run"] == len(selection["history"]) == 2
    assert done["best_epoch"] == selection["best"]["epoch"] and done["valid_lf_em"] == selection["best"]["dev_score"]
    readme = (results / "downstream" / "webqsp" / "README.md").read_text()
    assert readme.startswith("# Downstream: WebQSP parser trained on 90% of the labels")
    assert "qgen downstream webqsp --prep out/webqsp" in readme and "--select-on accuracy" in readme
    assert "| low_synthetic_round_trip |" in readme and "selected on the validation split's logical-form exact" in readme
    with pytest.raises(ValueError, match="wikisql or webqsp"):
        DownstreamConfig(dataset="spider")


def test_a_fine_tuning_row_names_its_training_set_and_its_pre_trained_parser(tmp_path: Path) -> None:
    (tmp_path / "rows" / "low_synthetic_round_trip_score").mkdir(parents=True)
    with pytest.raises(ValueError, match="run that row first"):
        _finetuning("finetune_clean_low_synthetic_round_trip_score", "finetune_clean_low_synthetic_round_trip_score",
                    tmp_path)
    (tmp_path / "rows" / "low_synthetic_round_trip_score" / "done.json").write_text("{}")
    pretrained = str(tmp_path / "rows" / "low_synthetic_round_trip_score" / "best.pt")
    assert _finetuning("finetune_low_synthetic_round_trip_score", "finetune_low_synthetic_round_trip_score",
                       tmp_path) == ("low", pretrained)
    # seeded rows pass their base name: the training set and the parser do not depend on the seed
    assert _finetuning("finetune_clean_low_synthetic_round_trip_score_seed2",
                       "finetune_clean_low_synthetic_round_trip_score", tmp_path) == (
        "low_synthetic_round_trip_exact", pretrained)
