"""One-off generation (``qgen generate``): logical forms in, questions with scores out.

Inputs as everywhere else in qgen: a ``.jsonl`` or ``.parquet`` file of ``{id, lf, lf_type?, names?}``
records or a dataset name (``qgen.samplers.files.read_logical_forms``), or plain text, one logical
form per line, where a line that starts with ``{`` is read as such a JSON record. A logical form
without a type gets the ``--lf-type`` given, else the one its text shows (``parsers.lf_type``).

Checks (on unless ``checks=False``): the whole beam is decoded and its questions are ranked first by
whether they pass the faithfulness audit (``qgen.synth.audit``: every value and name, the comparison's
direction, the aggregate), then, among those, by whether they pass the over-copy filter
(``qgen.synth.filter``, its default thresholds), then by score: the first is the one synthesis would
write. For ``SELECT name FROM players WHERE points < 20`` the shipped model's best-scored question says
"larger than 20"; its second, "smaller than 20", comes first. A question that still fails a check
carries what it fails. The candidates are those synthesis chooses among: the questions of a search that
runs until the whole beam has finished, best score first. A search that returns fewer stops earlier
(OpenNMT-py's rule), so without the checks ``num_return=1`` can give another question than the first of
``num_return=beam``: one that finished before a better-scored one could.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping, Sequence

import torch

from parsers.jsonl import TextLine, read_text_lines
from qgen.checkpoint import load_checkpoint
from qgen.exported_model import resolve_model
from qgen.decode import beam_search
from qgen.batching import default_max_tokens, token_batches
from qgen.model import make_batch

if TYPE_CHECKING:
    from qgen.datasets.sparql_json import SparqlJsonFormat


@dataclass(frozen=True)
class GenerateInput:
    """One logical form to generate for; ``error`` when it could not even be read."""
    id: str
    lf: str
    lf_type: str
    names: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    where: str = ""  # "line N: " before a tokenizer error, for an input read from a line


def read_generate_inputs(lf: str | None, path: str | Path | None, lf_type: str = "auto",
                         data_dir: str | Path | None = None, fmt: str = "auto",
                         fields: "SparqlJsonFormat | None" = None) -> list[GenerateInput]:
    """The logical forms of one ``qgen generate`` call: the argument, else the file (or stdin) in
    ``fmt`` (``qgen.samplers.formats``; text lines are read here, where stdin is one too)."""
    from qgen.samplers.files import JSONL_SUFFIXES, PARQUET_SUFFIXES, DATASETS, read_logical_forms

    if lf is not None:
        return [_plain("1", lf, lf_type)]
    if path is not None and (fmt not in ("auto", "text")
                             or (fmt == "auto" and Path(path).suffix.lower() in (*JSONL_SUFFIXES, *PARQUET_SUFFIXES,
                                                                                 ".json"))
                             or (fmt == "auto" and str(path) in DATASETS and not Path(path).exists())):
        return [_from_record(r) for r in read_logical_forms(path, lf_type, data_dir=data_dir, fmt=fmt,
                                                            fields=fields)]
    from qgen.datasets.jsonl import parse_line

    inputs = []
    for line in read_logical_form_lines(path):
        if line.error is None and line.text.lstrip().startswith("{"):
            inputs.append(_from_record(parse_line(line.text, f"line-{line.number}", lf_type, "input", line.number,
                                                  "line")))
        else:
            inputs.append(_from_line(line, lf_type))
    return inputs


def _from_line(line: TextLine, lf_type: str) -> GenerateInput:
    """A text line's logical form (its read error, if any), its type told from the text under ``auto``."""
    where = f"line {line.number}: "
    if line.error is not None:
        return GenerateInput(f"line-{line.number}", line.text, lf_type, error=str(line.error))
    return replace(_plain(f"line-{line.number}", line.text, lf_type, where), where=where)


def _plain(ident: str, text: str, lf_type: str, where: str = "") -> GenerateInput:
    from parsers.lf_type import AUTO, LfTypeError, infer_lf_type

    if lf_type != AUTO:
        return GenerateInput(ident, text, lf_type)
    try:
        return GenerateInput(ident, text, infer_lf_type(text))
    except LfTypeError as err:
        return GenerateInput(ident, text, "", error=f"{where}{err}")


def _from_record(record) -> GenerateInput:
    """A file record, named in its errors by its id (one without an id, ``line-N``, by its line, as a text
    line is)."""
    where = f"{record.id.replace('-', ' ')}: " if record.id.startswith("line-") else f"{record.id}: "
    error = record.load_error
    if error is not None and not error.startswith(where):  # a reader's error that does not say which record
        error = where + error
    return GenerateInput(record.id, record.logical_form, record.lf_type, dict(record.names), error, where)


def read_logical_form_lines(path: str | Path | None = None) -> list[TextLine]:
    """The non-blank lines of ``path`` (stdin without one), one logical form each: split at ``\\n``
    only (a U+2028 or ``\\r`` stays inside its line); a line too long or not UTF-8 carries its error."""
    if path is None:
        return list(read_text_lines(sys.stdin.buffer))
    with open(path, "rb") as handle:
        return list(read_text_lines(handle))


def generate_questions(inputs: Sequence[str | TextLine | GenerateInput], checkpoint: str | Path,
                       lf_type: str = "sparql", names: Mapping[str, str] | None = None, beam: int = 4,
                       num_return: int = 1, batch_size: int | None = None, no_repeat: bool = False,
                       max_tokens: int | None = None, checks: bool = True) -> Iterator[dict]:
    """Per input, in order: ``{"id", "lf", "lf_type", "questions": [(question, score), ...], "failures":
    [[check failed, ...] per question]}`` best first (score: length-normalised log-probability; with
    ``checks``, the questions that pass the checks come first, see the module's docstring; without,
    ``failures`` is absent), or ``{"id", "lf", "error"}`` for one that cannot be read. A plain string or
    ``TextLine`` is of type ``lf_type``; ``names`` add to each input's own. ``no_repeat``: no word right
    after itself. Batches: at most ``max_tokens`` source tokens (default: what fits the device) and
    ``batch_size`` logical forms (default: no limit)."""
    from parsers import LogicalFormError, tokenize_lf
    from qgen.synth.config import SynthesisConfig

    if not 1 <= num_return <= beam:
        raise ValueError(f"--num-return ({num_return}) must be between 1 and --beam ({beam})")
    from qgen.model_match import check_generator, model_record, unknown_lf_type

    record = model_record(resolve_model(checkpoint))
    check_generator(checkpoint, facts=record)  # a parser writes no questions
    items = [_as_input(item, i, lf_type) for i, item in enumerate(inputs, 1)]
    parsed: list[list[str] | str] = []
    for item in items:
        if item.error is not None:
            parsed.append(item.error)
            continue
        wrong_type = unknown_lf_type(record, item.lf_type)
        if wrong_type is not None:
            parsed.append(f"{item.where}lf_type {item.lf_type}: {wrong_type}")
            continue
        try:
            tokens = tokenize_lf(item.lf, item.lf_type, names={**item.names, **(names or {})}).tokens
        except LogicalFormError as err:
            parsed.append(f"{item.where}{err}")
            continue
        if len(tokens) > SynthesisConfig.max_src_len:  # as synthesis refuses it: a batch would cut the rest off
            parsed.append(f"{item.where}InputTooLong: {len(tokens)} tokens, more than max_src_len "
                          f"{SynthesisConfig.max_src_len}")
        else:
            parsed.append(tokens)
    good = [i for i, p in enumerate(parsed) if isinstance(p, list)]
    # With the checks, the whole beam's questions, as synthesis searches: its choice is the first that passes.
    decoded = decode_token_lists([parsed[i] for i in good], checkpoint, beam, beam if checks else num_return,
                                 batch_size, no_repeat, max_tokens)
    answers = dict(zip(good, decoded))
    for i, item in enumerate(items):
        if i not in answers:
            yield {"id": item.id, "lf": item.lf, "error": parsed[i]}
        elif checks:
            ranked = rank_by_checks(item.lf_type, item.lf, parsed[i], answers[i])[:num_return]  # type: ignore[arg-type]
            yield {"id": item.id, "lf": item.lf, "lf_type": item.lf_type,
                   "questions": [(q, score) for q, score, _ in ranked], "failures": [f for *_, f in ranked]}
        else:
            yield {"id": item.id, "lf": item.lf, "lf_type": item.lf_type, "questions": answers[i]}


def rank_by_checks(lf_type: str, lf: str, lf_tokens: list[str], questions: list[tuple[str, float]]
                   ) -> list[tuple[str, float, list[str]]]:
    """``questions`` (one logical form's, best score first) with what each fails: those passing the audit
    and the over-copy filter, then those passing the audit only, then the rest, each group in score order
    (a stable sort); so the first is the one synthesis writes (``QuestionWriter._ranked``)."""
    from qgen.synth.audit import audit_pair
    from qgen.synth.filter import OverCopyFilter

    overcopy = OverCopyFilter()
    checked = []
    for question, score in questions:
        audit = list(audit_pair(lf_type, lf, lf_tokens, question).failures)
        copying = overcopy.judge(question.split(), lf_tokens, score).reason
        checked.append((question, score, audit, [copying] if copying else []))
    checked.sort(key=lambda c: (bool(c[2]), not c[2] and bool(c[3])))
    return [(question, score, audit + copying) for question, score, audit, copying in checked]


def decode_token_lists(token_lists: Sequence[list[str]], checkpoint: str | Path, beam: int = 4, num_return: int = 1,
                       batch_size: int | None = None, no_repeat: bool = False,
                       max_tokens: int | None = None) -> list[list[tuple[str, float]]]:
    """Per list of logical-form tokens, in order, its ``num_return`` questions and scores, best first."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, src_vocab, tgt_vocab, _ = load_checkpoint(resolve_model(checkpoint), device)  # "default": the shipped one
    answers: dict[int, list[tuple[str, float]]] = {}
    by_length = sorted(enumerate(token_lists), key=lambda item: (len(item[1]), item[0]))
    budget = max_tokens or default_max_tokens(device, model.cfg, beam)
    for batch_items in token_batches(by_length, budget, batch_size):
        chunk = [i for i, _ in batch_items]
        batch = make_batch([tokens for _, tokens in batch_items], None, src_vocab, tgt_vocab, model.cfg.copy).to(device)
        found = beam_search(model, batch, beam=beam, num_return=num_return, no_repeat=no_repeat)
        for i, hyps, oovs in zip(chunk, found, batch.oovs):
            answers[i] = [(" ".join(tgt_vocab.decode(h.ids, oovs)), round(h.score, 4)) for h in hyps]
    return [answers[i] for i in range(len(token_lists))]


def _as_input(item: str | TextLine | GenerateInput, number: int, lf_type: str) -> GenerateInput:
    if isinstance(item, GenerateInput):
        return item
    if isinstance(item, TextLine):
        return _from_line(item, lf_type)
    return _plain(str(number), item, lf_type)  # under auto, its type told from its text
