"""QuestionWriter: a tiny extended-copy model copies unseen names; every bad input is a typed reject."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

import qgen.synth.generator as generator_module
from parsers import tokenize_lf
from parsers.tokens import nl_tokens
from qgen.checkpoint import file_checksum
from qgen.data import Pair
from qgen.datasets.records import RawExample
from qgen.model import ModelConfig
from qgen.synth.generator import QuestionWriter
from qgen.synth.schema import PairRow, RejectRow
from qgen.train import TrainConfig, train

NAMES = ["bali", "paris", "new york", "porto", "las palmas", "seville", "nantes", "san jose", "krakow", "budapest"]
RELATIONS = [("capital", "what is the capital of {} ?"), ("mayor", "who is the mayor of {} ?")]


def sparql(i: int, relation: str) -> str:
    return f"PREFIX ns: <http://rdf.freebase.com/ns/> SELECT ?x WHERE {{ ns:m.0{i:04d} ns:location.{relation} ?x }}"


def record(i: int, name: str | None, relation: str = "capital", **kw: object) -> RawExample:
    names = {f"m.0{i:04d}": name} if name else {}
    return RawExample(kw.pop("id", f"q{i}"), "test", kw.pop("lf_type", "sparql"), kw.pop("lf", sparql(i, relation)),  # type: ignore[arg-type]
                      None, "toy", "{}", names=names, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Copy + Scratchpad model (extended copy) trained in a few seconds on 20 toy pairs."""
    torch.set_num_threads(1)
    pairs = [Pair(f"{n}-{r}", tokenize_lf(sparql(i, r), "sparql", names={f"m.0{i:04d}": n}).tokens,
                  nl_tokens(q.format(n)), n) for i, n in enumerate(NAMES) for r, q in RELATIONS]
    cfg = ModelConfig(embedding_dim=16, hidden_size=32, num_layers=1, dropout=0.0, copy="extended",
                      coverage_dim=10, memory="scratchpad")
    out = tmp_path_factory.mktemp("model")
    train(pairs, pairs[:4], cfg, TrainConfig(epochs=80, batch_size=20, learning_rate=1e-2, teacher_forcing=1.0,
                                             seed=3), out, log=lambda _: None)
    return out / "best.pt"


def test_unseen_names_are_copied_in_extended_mode(checkpoint: Path) -> None:
    writer = QuestionWriter(checkpoint, beam=4)
    assert writer.copy_mode == "extended" and writer.model_id == "sha256:" + file_checksum(checkpoint)
    rows = writer.write([record(90, "oslo"), record(91, "zagreb", "mayor"), record(92, "bali")])
    assert all(isinstance(r, PairRow) for r in rows), rows
    assert [r.question for r in rows] == ["what is the capital of oslo ?", "who is the mayor of zagreb ?",
                                         "what is the capital of bali ?"]
    for row in rows:
        assert row.score < 0 and row.overcopy == 0 and row.created_at == writer.created_at
        assert 0 < row.copy_fraction <= 1 and row.lf_tokens[5:7] == ["ent:", row.question.split()[-2]]


def test_oov_tokens_count_as_copied(checkpoint: Path) -> None:
    writer = QuestionWriter(checkpoint)
    from qgen.decode import beam_search
    from qgen.model import make_batch

    tokens = tokenize_lf(sparql(1, "capital"), "sparql", names={"m.00001": "oslo"}).tokens
    batch = make_batch([tokens], None, writer.src_vocab, writer.tgt_vocab, "extended")
    hyp = beam_search(writer.model, batch, beam=2)[0][0]
    shares = generator_module.copy_shares(writer.model, batch, [hyp])[0]
    oov = [s for i, s in zip(hyp.ids, shares) if i >= len(writer.tgt_vocab)]
    assert oov and all(s == pytest.approx(1.0) for s in oov)
    assert all(0.0 <= s <= 1.0 for s in shares)


def test_each_bad_input_is_a_reject_with_its_stage(checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = QuestionWriter(checkpoint, max_src_len=30)
    inputs = [
        record(1, "oslo"),
        record(2, None, id="bad-sparql", lf="SELECT ?x WHERE { ?x ns:"),
        record(3, None, id="unnamed"),
        record(4, "oslo", id="timed-out-query", load_error="KB query timed out after 30 s"),
        record(5, "oslo", id="bad-type", lf_type="cypher"),
        record(6, " ".join(["word"] * 40), id="too-long"),
        record(7, "lyon", "mayor"),
    ]
    rows = writer.write(inputs, positions=range(100, 107))
    assert [r.id for r in rows] == [r.id for r in inputs]
    stages = {r.id: r.stage for r in rows if isinstance(r, RejectRow)}
    assert stages == {"bad-sparql": "tokenize", "unnamed": "unnamed_entity", "timed-out-query": "load",
                      "bad-type": "tokenize", "too-long": "tokenize"}
    reasons = {r.id: r.reason for r in rows if isinstance(r, RejectRow)}
    assert reasons["bad-sparql"].startswith("SparqlSyntaxError")
    assert "<e0>" in reasons["unnamed"] and "timed out" in reasons["timed-out-query"]
    assert "ValueError" in reasons["bad-type"] and "max_src_len 30" in reasons["too-long"]
    assert '"position": 101' in rows[1].input  # type: ignore[union-attr]

    def slow(*args: object, **kwargs: object) -> object:
        time.sleep(2)
        raise AssertionError("the time limit should have stopped this")

    monkeypatch.setattr(generator_module, "tokenize_lf", slow)
    started = time.perf_counter()
    [row] = QuestionWriter(checkpoint, tokenize_timeout_s=0.1).write([record(8, "oslo")])
    assert isinstance(row, RejectRow) and row.stage == "timeout" and time.perf_counter() - started < 1.5


def test_a_failing_batch_becomes_generate_rejects(checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(generator_module, "beam_search", broken)
    rows = QuestionWriter(checkpoint).write([record(1, "oslo"), record(2, "lyon")])
    assert [(r.stage, r.reason) for r in rows] == [("generate", "RuntimeError: CUDA out of memory")] * 2  # type: ignore[union-attr]


def test_unfinished_questions_are_rejected(checkpoint: Path) -> None:
    [row] = QuestionWriter(checkpoint, max_len=3).write([record(1, "oslo")])
    assert isinstance(row, RejectRow) and row.stage == "generate" and row.reason.startswith("unfinished")


def test_results_do_not_depend_on_batching(checkpoint: Path) -> None:
    inputs = [record(i, name, relation) for i, name in enumerate(["oslo", "new york", "bali", "kuala lumpur", "rome"])
              for relation in ("capital", "mayor")]
    one = QuestionWriter(checkpoint, batch_size=1).write(inputs)
    many = QuestionWriter(checkpoint, batch_size=4).write(inputs)
    assert [r.id for r in one] == [r.id for r in inputs]
    assert [r.question for r in one] == [r.question for r in many]  # type: ignore[union-attr]
    assert [r.score for r in one] == pytest.approx([r.score for r in many], abs=1e-5)  # type: ignore[union-attr]


def test_no_repeat_reaches_the_beam_search(checkpoint: Path, no_repeat_seen: list) -> None:
    """What the option does is tested on beam search itself (tests/qgen/model); here, that it gets there."""
    inputs = [record(90, "oslo"), record(91, "zagreb", "mayor")]
    plain = QuestionWriter(checkpoint).write(inputs)
    blocked = QuestionWriter(checkpoint, no_repeat=True).write(inputs)
    assert no_repeat_seen == [False, True]
    # this model repeats nothing here, so forbidding repeats changes nothing
    assert [r.question for r in blocked] == [r.question for r in plain]  # type: ignore[union-attr]


def test_batches_by_token_budget_give_the_same_rows_in_input_order(checkpoint: Path) -> None:
    records = [record(100 + i, name, relation) for i, name in enumerate(NAMES) for relation, _ in RELATIONS]
    records.append(record(200, None))  # a reject among them keeps its place
    one_by_one = QuestionWriter(checkpoint, max_tokens=1).write(records)
    big = QuestionWriter(checkpoint, max_tokens=10_000).write(records)
    assert [r.id for r in big] == [r.id for r in records]
    assert [(type(r), getattr(r, "question", None)) for r in big] == \
           [(type(r), getattr(r, "question", None)) for r in one_by_one]
    for left, right in zip(big, one_by_one):
        if isinstance(left, PairRow):
            assert left.score == pytest.approx(right.score, abs=1e-5)


def test_a_batch_without_memory_is_halved_until_it_fits(checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = generator_module.beam_search
    sizes: list[int] = []

    def small_device(model, batch, *args, **kwargs):  # type: ignore[no-untyped-def]
        sizes.append(len(batch))
        if len(batch) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (a test)")
        return real(model, batch, *args, **kwargs)

    monkeypatch.setattr(generator_module, "beam_search", small_device)
    records = [record(300 + i, name) for i, name in enumerate(NAMES[:7])]
    rows = QuestionWriter(checkpoint, max_tokens=10_000).write(records)
    assert all(isinstance(r, PairRow) for r in rows) and [r.id for r in rows] == [r.id for r in records]
    assert sizes[0] == 7 and sum(n for n in sizes if n <= 2) == 7  # halves until each fits, each LF once


def test_one_logical_form_without_memory_becomes_a_reject(checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_memory(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise torch.OutOfMemoryError("CUDA out of memory (a test)")

    monkeypatch.setattr(generator_module, "beam_search", no_memory)
    rows = QuestionWriter(checkpoint, max_tokens=10_000).write([record(1, "oslo"), record(2, "lyon")])
    assert [type(r) for r in rows] == [RejectRow, RejectRow]
    assert all(r.stage == "generate" and r.reason.startswith("OutOfMemoryError") for r in rows)


def test_candidates_write_the_first_question_that_passes_the_audit(checkpoint: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Of the beam's N best, the first whose question holds the entity's name; none: the best."""
    from qgen.decode import Hypothesis

    writer = QuestionWriter(checkpoint, beam=4, candidates=3)

    def hypothesis(question: str, score: float) -> Hypothesis:
        return Hypothesis(writer.tgt_vocab.encode(question.split()), score, score)

    wrong, right = hypothesis("what is the capital of paris ?", -0.1), hypothesis("what is the capital of bali ?", -0.2)
    asked: list[int] = []

    def search(model, batch, beam, max_len, alpha, num_return=1, no_repeat=False, copy_shares=False):
        asked.append(num_return)
        return [[wrong, right, wrong][:num_return] for _ in range(len(batch.oovs))]

    monkeypatch.setattr(generator_module, "beam_search", search)
    [chosen] = writer.write([record(0, "bali")])
    assert chosen.question == "what is the capital of bali ?" and chosen.score == pytest.approx(-0.2)  # type: ignore[union-attr]
    [best] = QuestionWriter(checkpoint, beam=4).write([record(0, "bali")])
    assert best.question == "what is the capital of paris ?" and asked == [3, 1]  # type: ignore[union-attr]
    [best_passes] = writer.write([record(1, "paris")])
    assert best_passes.question == "what is the capital of paris ?"  # type: ignore[union-attr]
    [none_pass] = writer.write([record(2, "nantes")])
    assert none_pass.question == "what is the capital of paris ?"  # type: ignore[union-attr]
    writer.other_questions = {}  # the candidates after the chosen one that pass too, distinct, best first
    also = hypothesis("the capital of bali is what ?", -0.3)
    monkeypatch.setattr(generator_module, "beam_search",
                        lambda *args, **kwargs: [[wrong, right, also, right] for _ in range(len(args[1].oovs))])
    writer.write([record(0, "bali"), record(2, "nantes")])
    assert writer.other_questions == {"q0": [("the capital of bali is what ?", pytest.approx(-0.3))]}
    with pytest.raises(ValueError, match="candidates must be between 1 and the beam size 2"):
        QuestionWriter(checkpoint, beam=2, candidates=3)


def test_sampled_candidates_are_drawn_from_the_model_and_tried_in_the_order_drawn(checkpoint: Path) -> None:
    """With sampling the beam is not searched: N questions are drawn (more than the beam if asked), the
    same seed draws the same ones, and a negative temperature is refused."""
    def write(seed: int) -> list[str]:  # hot: the toy model is too sure of itself at temperature 1
        writer = QuestionWriter(checkpoint, beam=2, candidates=6, sampling=3.0, seed=seed)
        return [r.question for r in writer.write([record(i, "bali") for i in range(6)])]  # type: ignore[union-attr]

    first = write(3)
    assert len(first) == 6 and first == write(3)
    greedy_writer = QuestionWriter(checkpoint, beam=1)
    beam_questions = [r.question for r in greedy_writer.write([record(i, "bali") for i in range(6)])]  # type: ignore[union-attr]
    assert first != beam_questions and first != write(4)  # draws, not the beam's best
    with pytest.raises(ValueError, match="temperature"):
        QuestionWriter(checkpoint, sampling=-1.0)


def test_with_a_round_trip_the_first_candidate_read_back_is_written(checkpoint: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Given a round-trip judge, the writer parses back the first audit-passing candidates of every
    logical form in one call and writes the first whose round trip holds (else the first, with its
    failing verdict); each written question's verdict is left by record id."""
    from types import SimpleNamespace

    from qgen.decode import Hypothesis
    from qgen.synth.round_trip import RoundTripVerdict

    writer = QuestionWriter(checkpoint, beam=4, candidates=4)

    def hypothesis(question: str, score: float) -> Hypothesis:
        return Hypothesis(writer.tgt_vocab.encode(question.split()), score, score)

    misread = hypothesis("what is the capital of bali ?", -0.1)  # passes the audit, the parser misreads it
    read_back = hypothesis("the capital of bali is what ?", -0.2)
    monkeypatch.setattr(generator_module, "beam_search", lambda *args, **kwargs: [
        [misread, misread, read_back, hypothesis("what is the mayor of bali ?", -0.3)] for _ in args[1].oovs])
    calls: list[list[str]] = []

    class Judge:
        parser = SimpleNamespace(lf_types=("sparql",))

        def judge(self, lf_type, questions, lfs, answers=None):
            calls.append([" ".join(q) for q in questions])
            # the second logical form (the mayor's) is never read back, whatever its question
            return [RoundTripVerdict(q[0] == "the" and "mayor" not in lf, "exact", -1.0, "parse")
                    for q, lf in zip(questions, lfs)]

    writer.round_trip = Judge()
    first, second = writer.write([record(0, "bali"), record(3, "bali", "mayor", id="other")])
    assert first.question == "the capital of bali is what ?"  # type: ignore[union-attr]
    assert second.question == "what is the capital of bali ?"  # type: ignore[union-attr]  # none holds: the first
    # distinct candidates only, up to the tries, both logical forms' in one call
    assert len(calls) == 1 and calls[0] == ["what is the capital of bali ?", "the capital of bali is what ?",
                                            "what is the mayor of bali ?"] * 2
    assert writer.round_trip_verdicts["q0"].keep and not writer.round_trip_verdicts["other"].keep
    monkeypatch.setattr(generator_module, "beam_search", lambda *args, **kwargs: [[misread] for _ in args[1].oovs])
    [unread] = writer.write([record(0, "bali")])
    assert unread.question == "what is the capital of bali ?"  # type: ignore[union-attr]
    assert not writer.round_trip_verdicts["q0"].keep


def test_with_a_round_trip_and_the_over_copy_filter_a_candidate_it_rejects_is_passed_over(
        checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Given the corpus's over-copy filter too, a candidate that it rejects is not parsed back and not
    written while another one passes it, even if the parser reads it back; a candidate that passes the
    over-copy filter but not the round trip is preferred to one that the over-copy filter rejects."""
    from types import SimpleNamespace

    from qgen.decode import Hypothesis
    from qgen.synth.filter import FilterThresholds, OverCopyFilter
    from qgen.synth.round_trip import RoundTripVerdict

    writer = QuestionWriter(checkpoint, beam=4, candidates=4)

    def hypothesis(question: str, score: float) -> Hypothesis:
        return Hypothesis(writer.tgt_vocab.encode(question.split()), score, score)

    repeated = hypothesis("what is the capital of bali bali ?", -0.1)  # copies "bali" twice: over-copy
    plain = hypothesis("what is the capital of bali ?", -0.2)
    monkeypatch.setattr(generator_module, "beam_search", lambda *args, **kwargs: [[repeated, plain]
                                                                                   for _ in args[1].oovs])
    calls: list[list[str]] = []
    holds: dict[str, bool] = {}

    class Judge:
        parser = SimpleNamespace(lf_types=("sparql",))

        def judge(self, lf_type, questions, lfs, answers=None):
            calls.append([" ".join(q) for q in questions])
            return [RoundTripVerdict(holds[" ".join(q)], "exact", -1.0, "parse") for q in questions]

    writer.round_trip, writer.overcopy = Judge(), OverCopyFilter(FilterThresholds())
    holds.update({"what is the capital of bali bali ?": True, "what is the capital of bali ?": True})
    [pair] = writer.write([record(0, "bali")])
    assert pair.question == "what is the capital of bali ?"  # type: ignore[union-attr]
    assert calls == [["what is the capital of bali ?"]]  # the over-copied question is never parsed
    holds["what is the capital of bali ?"] = False
    [pair] = writer.write([record(0, "bali")])
    assert pair.question == "what is the capital of bali ?"  # type: ignore[union-attr]
    assert not writer.round_trip_verdicts["q0"].keep  # written with its failing verdict
    writer.overcopy = None  # without it the first candidate read back is written, as before
    holds["what is the capital of bali bali ?"] = True
    [pair] = writer.write([record(0, "bali")])
    assert pair.question == "what is the capital of bali bali ?"  # type: ignore[union-attr]


def test_an_over_copied_candidate_does_not_use_up_a_round_trip_try(
        checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The round trip parses back up to ROUND_TRIP_TRIES candidates; one that the over-copy filter
    rejects is never parsed, so it does not count: the candidates after it are still tried."""
    from types import SimpleNamespace

    from qgen.decode import Hypothesis
    from qgen.synth.filter import FilterThresholds, OverCopyFilter
    from qgen.synth.generator import ROUND_TRIP_TRIES
    from qgen.synth.round_trip import RoundTripVerdict

    writer = QuestionWriter(checkpoint, beam=8, candidates=8)
    plain = ["what is the capital of bali ?", "who is the capital of bali ?", "what is capital of bali ?",
             "what the capital of bali ?"]  # words of the toy vocabulary
    assert len(plain) == ROUND_TRIP_TRIES + 1
    questions = ["what is the capital of bali bali ?", "the capital of bali bali is what ?"] + plain
    hypotheses = [Hypothesis(writer.tgt_vocab.encode(q.split()), -0.1 * (n + 1), -0.1 * (n + 1))
                  for n, q in enumerate(questions)]
    monkeypatch.setattr(generator_module, "beam_search", lambda *args, **kwargs: [list(hypotheses)
                                                                                   for _ in args[1].oovs])
    calls: list[list[str]] = []

    class Judge:
        parser = SimpleNamespace(lf_types=("sparql",))

        def judge(self, lf_type, questions, lfs, answers=None):
            calls.append([" ".join(q) for q in questions])
            return [RoundTripVerdict(" ".join(q) == plain[ROUND_TRIP_TRIES - 1], "exact", -1.0, "parse")
                    for q in questions]

    writer.round_trip, writer.overcopy = Judge(), OverCopyFilter(FilterThresholds())
    [pair] = writer.write([record(0, "bali")])
    assert calls == [plain[:ROUND_TRIP_TRIES]]  # the two over-copied ones were skipped, not counted
    assert pair.question == plain[ROUND_TRIP_TRIES - 1]  # type: ignore[union-attr]
    assert writer.round_trip_verdicts["q0"].keep
