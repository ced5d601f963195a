"""The semantic parser: the task's pairs swap source and target, a parser checkpoint says what it is
and carries its round-trip calibration, forced scores equal the beam's, accuracy is canonical."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
from typer.testing import CliRunner

from qgen.checkpoint import CheckpointError
from qgen.cli import app
from qgen.data import Pair, holdout
from qgen.decode import beam_search, forced_scores
from qgen.model import ModelConfig, make_batch
from qgen.parse import PARSE_MAX_TGT_LEN, Parser, evaluate_parser, lf_types_of, read_task_pairs
from qgen.preprocess import preprocess_dataset
from qgen.train import TrainConfig
from qgen.train_job import train_on_examples

TINY = ModelConfig(embedding_dim=8, hidden_size=16, num_layers=1, dropout=0.0, copy="extended", memory="scratchpad")
runner = CliRunner()


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory, demo_sample: Path) -> Path:
    """The demo sample preprocessed: 45 SPARQL and SQL pairs."""
    out = tmp_path_factory.mktemp("prep")
    preprocess_dataset(str(demo_sample), out, workers=1)
    return out / "train.parquet"


@pytest.fixture(scope="module")
def parser_dir(examples: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A parser trained three epochs (enough for its beams to end with EOS)."""
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("parser")
    train_on_examples(examples, out, TINY, TrainConfig(epochs=3, batch_size=16, learning_rate=3e-2,
                                                       teacher_forcing=1.0), task="parse", log=lambda _: None)
    return out


def test_read_task_pairs_swaps_source_and_target(examples: Path) -> None:
    table = pq.read_table(examples).to_pylist()
    generate = read_task_pairs(examples, "generate")
    parse = read_task_pairs(examples, "parse")
    assert len(generate) == len(parse) == len(table)
    for row, g, p in zip(table, generate, parse):
        assert (g.id, g.src, g.tgt) == (row["id"], row["lf_tokens"], row["question_tokens"])
        assert (p.id, p.src, p.tgt, p.group) == (g.id, g.tgt, g.src, g.group)
    raw = read_task_pairs(examples, "parse", entity_replacement=False)
    assert [p.tgt for p in raw] == [row["lf_tokens_raw"] for row in table]
    with pytest.raises(ValueError, match="task must be one of"):
        read_task_pairs(examples, "translate")


def test_parser_checkpoint_records_its_task_data_and_calibration(examples: Path, parser_dir: Path) -> None:
    payload = torch.load(parser_dir / "best.pt", weights_only=True)
    assert payload["task"] == "parse"
    assert payload["lf_types"] == lf_types_of(examples) == ["sparql", "sql"]
    assert payload["preprocessing"] == {"entity_replacement": True, "lowercase": True}
    assert payload["train_config"]["max_tgt_len"] == PARSE_MAX_TGT_LEN  # logical forms are long
    calibration = payload["round_trip"]
    _, valid = holdout(read_task_pairs(examples, "parse"), 0.1, seed=1)
    scores = Parser.load(parser_dir / "best.pt").score([p.src for p in valid], [p.tgt for p in valid])
    assert calibration["percentile"] == 5.0 and calibration["pairs"] == len(valid) > 1
    assert calibration["threshold"] == pytest.approx(float(torch.quantile(torch.tensor(scores), 0.05)), abs=1e-5)
    assert min(scores) <= calibration["threshold"] <= calibration["median"] <= max(scores)


def test_load_refuses_a_question_generator(tiny_checkpoint: Path) -> None:
    with pytest.raises(CheckpointError, match="is a question generator, not a parser"):
        Parser.load(tiny_checkpoint)


def test_score_equals_the_beam_searchs_score_for_its_hypothesis(examples: Path, parser_dir: Path) -> None:
    parser = Parser.load(parser_dir / "best.pt")
    questions = [p.src for p in read_task_pairs(examples, "parse")[:8]]
    batch = make_batch(questions, None, parser.src_vocab, parser.tgt_vocab, parser.model.cfg.copy)
    best = [hyps[0] for hyps in beam_search(parser.model, batch, beam=3, max_len=parser.max_len)]
    assert all(len(h.ids) < parser.max_len for h in best)  # each ended with EOS, so its score counts it
    parses = [parser.tgt_vocab.decode(h.ids, oovs) for h, oovs in zip(best, batch.oovs)]
    forced = forced_scores(parser.model, make_batch(questions, parses, parser.src_vocab, parser.tgt_vocab,
                                                    parser.model.cfg.copy))
    assert forced == pytest.approx([h.score for h in best], abs=1e-5)
    assert parser.score(questions, parses) == pytest.approx([h.score for h in best], abs=1e-5)
    assert [(tokens, pytest.approx(score, abs=1e-5)) for [(tokens, score)] in parser.parse(questions, beam=3)] == \
        [(tokens, h.score) for tokens, h in zip(parses, best)]


class CannedParser:
    """Parses by lookup: what ``evaluate_parser`` needs of a parser."""

    def __init__(self, parses: dict[str, list[str] | None]) -> None:
        self.parses = parses

    def parse(self, questions, beam=4, k=1):
        found = [self.parses[" ".join(q)] for q in questions]
        return [[(tokens, -1.0)] if tokens is not None else [] for tokens in found]


def test_evaluate_parser_counts_canonical_matches() -> None:
    gold = "select a from t where b = ' x ' and c > 3".split()
    pairs = [Pair("1", ["q1"], gold, "1"), Pair("2", ["q2"], gold, "2"), Pair("3", ["q3"], gold, "3"),
             Pair("4", ["q4"], gold, "4")]
    canned = CannedParser({"q1": "SELECT a FROM t WHERE c > 3 AND b = x".split(),  # reordered, unquoted: the same
                           "q2": gold, "q3": "select a from t where b = ' x '".split(), "q4": None})
    result = evaluate_parser(canned, pairs, "sql", beam=2)
    assert result["examples"] == 4 and result["lf_exact_match"] == 0.5 and result["beam"] == 2
    assert result["predictions"] == ["SELECT a FROM t WHERE c > 3 AND b = x", " ".join(gold),
                                     "select a from t where b = ' x '", ""]
    assert evaluate_parser(canned, [], "sql")["lf_exact_match"] is None


def test_evaluate_parser_on_a_trained_parser(examples: Path, parser_dir: Path) -> None:
    parser = Parser.load(parser_dir / "best.pt")
    pairs = read_task_pairs(examples, "parse")[:6]
    result = evaluate_parser(parser, pairs, "sparql", beam=2)
    parses = parser.parse([p.src for p in pairs], beam=2)
    assert result["predictions"] == [" ".join(found[0][0]) for found in parses]
    assert 0.0 <= result["lf_exact_match"] <= 1.0 and result["examples"] == 6


def test_train_command_trains_a_parser(examples: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["train", str(examples), "--out", str(tmp_path / "parser"), "--task", "parse",
                                 "--epochs", "1", "--hidden", "16", "--embedding", "8", "--batch-size", "16",
                                 "--layers", "1", "--dropout", "0", "--model", "copynet"])
    assert result.exit_code == 0, result.output
    assert "round-trip calibration: score threshold" in result.stdout
    payload = torch.load(tmp_path / "parser" / "best.pt", weights_only=True)
    assert payload["task"] == "parse" and (payload["config"]["num_layers"], payload["config"]["hidden_size"]) == (1, 16)
    assert Parser.load(tmp_path / "parser" / "best.pt").lf_types == ["sparql", "sql"]


def test_train_command_refuses_an_unknown_task(examples: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["train", str(examples), "--out", str(tmp_path / "m"), "--task", "bogus"])
    assert result.exit_code == 2 and "--task must be generate or parse, got 'bogus'" in result.stderr
    assert not (tmp_path / "m").exists()


def test_evaluate_command_scores_a_parser_per_logical_form_type(examples: Path, parser_dir: Path,
                                                                tmp_path: Path) -> None:
    result = runner.invoke(app, ["evaluate", str(examples), "--checkpoint", str(parser_dir / "best.pt"),
                                 "--out", str(tmp_path / "eval"), "--beam", "1"])
    assert result.exit_code == 0, result.output
    assert "sparql: logical-form exact match" in result.stdout and "sql: logical-form exact match" in result.stdout
    import json

    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    ids = (tmp_path / "eval" / "ids.txt").read_text().splitlines()
    assert metrics["examples_scored"] == len(ids) == len((tmp_path / "eval" / "predictions.txt").read_text().splitlines())
    assert set(metrics["by_type"]) == {"sparql", "sql"} and 0.0 <= metrics["lf_exact_match"] <= 1.0
    assert set(metrics["by_type"]["sql"]["parts"]) == {"examples", "sel", "agg", "where_columns_operators", "where"}
    assert "parts" not in metrics["by_type"]["sparql"]  # the parts are WikiSQL's
