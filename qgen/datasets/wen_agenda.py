"""Wen et al.'s SF Hotel / SF Restaurant as the neural checklist reads them (seed 004, qgen/model/checklist.py).

Source: the goal (the act type) then one ``slot value`` pair per agenda item, in the act's order;
an ordinary value is delexicalised to its placeholder (``SLOT_NAME``), a special value (``none``,
``yes``, ``no``, ``dontcare``) or a question (``?``) stays as it is, and an act without slots gets
one ``null null`` item (the spec's choice: the checklist needs an agenda). Target: the utterance
normalised and delexicalised as the RNNLG protocol does it (qgen.metrics.wen), so a generation is
relexicalised with its act's values and scored against the same references.

    inform(name='hotel stratford';pricerange=moderate;area)  ->
    source  inform  name SLOT_NAME  pricerange SLOT_PRICERANGE  area ?
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qgen.data import Pair
from qgen.metrics.wen import DialogueAct, delexicalise, lexicalise, normalise, parse_act

NULL_ITEM = ("null", "null")
KEPT_VALUES = frozenset({"none", "yes", "no", "dontcare", "?"})  # qgen.metrics.wen's special values and "?"


@dataclass(frozen=True)
class AgendaExample:
    pair: Pair  # source (goal + items) -> delexicalised utterance tokens
    act: DialogueAct  # for relexicalising a generation


def agenda_tokens(act: DialogueAct) -> list[str]:
    """The checklist's source for ``act``: goal token, then slot-value pairs (see the module docstring)."""
    items: list[str] = []
    for slot, value in act.slots:
        items += [slot, value if value in KEPT_VALUES else "SLOT_" + slot.upper()]
    return [act.act, *(items or NULL_ITEM)]


def agenda_examples(domain: str, split: str, data_dir: str | Path | None = None) -> list[AgendaExample]:
    """One domain's split (train, dev or test) as checklist examples, in file order."""
    from qgen.datasets.registry import load_dataset

    examples = []
    for record in load_dataset(f"wen2015_{domain}", data_dir, split):
        if record.load_error:
            raise ValueError(f"Wen {domain} {split} record {record.id}: {record.load_error}")
        act = parse_act(record.logical_form)
        target = delexicalise(normalise(record.question or ""), act).split()
        examples.append(AgendaExample(Pair(record.id, agenda_tokens(act), target, record.id), act))
    return examples


def relexicalise(tokens: list[str], act: DialogueAct, domain: str) -> str:
    """A generated token list as text with the act's values restored."""
    return lexicalise(" ".join(tokens), act, domain)
