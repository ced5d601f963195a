"""``--split-by template``: a finished corpus's pairs as train / validation / test with no logical-form
template in two splits (Finegan-Dollak et al. 2018's query split), so a parser's test score measures
new query shapes, not memorised ones.

A template is the logical form with its values abstracted: entities (as the SPARQL parser finds them,
and any IRI that names a node rather than a predicate or a class, whatever its namespace) become ``<e>``,
string literals and numbers ``<v>``; keywords, variables, predicates, classes, tables and columns stay,
case and spacing normalised; SQL conditions that a WHERE only ANDs are sorted (their order is no
shape of its own). Templates are shuffled (seeded) and dealt to the splits in
turn, each to the split furthest below its share of pairs, so the sizes follow the fractions as
closely as whole templates allow.

Written beside the corpus as ``splits/{train,validation,test}.parquet`` (the pairs' schema, input
order kept within a split), with the summary (per split: pairs and templates) in ``manifest.json``'s
``splits``; the card's ``pairs`` configuration then names the three splits. The pair shards stay as they are.
"""
from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from qgen.io.output_folder import write_file

SPLITS = ("train", "validation", "test")
DEFAULT_FRACTIONS = (0.8, 0.1, 0.1)
FOLDER = "splits"


def lf_template(lf_type: str, logical_form: str) -> str:
    """The template of one logical form (see the module docstring); the text itself if it cannot be lexed."""
    from parsers.errors import LogicalFormError

    try:
        return _sparql_template(logical_form) if lf_type == "sparql" else _sql_template(logical_form)
    except LogicalFormError:  # a pair whose form no longer lexes is its own template
        return " ".join(logical_form.split())


def _sql_template(sql: str) -> str:
    from parsers.sql.validate import lex_sql
    from sqlglot.tokens import TokenType

    out = []
    for token in lex_sql(sql):
        if token.token_type in (TokenType.STRING, TokenType.NUMBER, TokenType.NATIONAL_STRING):
            out.append("<v>")
        elif token.token_type == TokenType.IDENTIFIER:
            out.append(f'"{token.text.lower()}"')
        else:
            out.append(token.text.lower())
    return " ".join(_conditions_in_order(out))


_AFTER_WHERE = ("group", "order", "limit", "having", "union", "intersect", "except", ";")  # what ends a WHERE


def _conditions_in_order(tokens: list[str]) -> list[str]:
    """``tokens`` with the conditions of a WHERE that only ANDs them sorted: ``a = <v> and b = <v>`` and
    ``b = <v> and a = <v>`` are one query shape (as ``qgen.lf_canonical`` compares SQL), so they must not
    land in two splits. Only the first WHERE's (up to what ends it: ORDER BY, UNION, ``;``, ...); conditions
    with OR, BETWEEN or brackets are left as they are."""
    if "where" not in tokens:
        return tokens
    start = tokens.index("where") + 1
    # (sqlglot lexes ORDER BY and GROUP BY as one token each)
    end = next((i for i in range(start, len(tokens)) if tokens[i].partition(" ")[0] in _AFTER_WHERE), len(tokens))
    where = tokens[start:end]
    if not where or any(t in ("or", "(", ")", "between") for t in where):  # BETWEEN x AND y: not a conjunction
        return tokens
    from qgen.lf_canonical import split_conditions

    ordered = sorted(split_conditions(where))
    joined = [token for number, condition in enumerate(ordered) for token in ("and",) * bool(number) + condition]
    return tokens[:start] + joined + tokens[end:]


def _sparql_template(query: str) -> str:
    from parsers.sparql.lexer import code_tokens, lex
    from parsers.sparql.tokenize import tokenize_sparql

    entities = {e.surface for e in tokenize_sparql(query, validate=False).entities}
    code = code_tokens(lex(query))
    values = _node_positions(code)
    out = []
    for i, token in enumerate(code):
        if token.text in entities or i in values:
            out.append("<e>")
        elif token.kind in ("string", "number"):
            out.append("<v>")
        elif token.kind == "langtag":
            continue  # "x"@en and "x" are one shape
        else:
            out.append(token.text if token.kind in ("iri", "pname", "var") else token.text.lower())
    return " ".join(out)


_PATH_PUNCT = {"/", "|", "^", "!"}  # inside a property path: the next IRI is a predicate too
_TYPE = ("a", "rdf:type", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>")
_NAMING_KEYWORDS = {"graph", "service", "from", "named"}  # the IRI after these names a graph or an endpoint


@dataclass
class _Group:
    """What the reader knows inside one open ``{ }`` group (the query's top level is one too)."""

    role: str = "s"  # of the next term: s(ubject), p(redicate), o(bject)
    depth: int = 0  # brackets of an expression (a FILTER's, a function's)
    values: bool = False  # a VALUES block
    path: int = 0  # brackets of a property path


def _node_positions(code: list) -> set[int]:
    """Where an IRI names a node, not a predicate, a class, a datatype, a graph or a function: a triple's
    subject or object, an IRI in a FILTER or other bracketed expression, one in a VALUES block. Any
    knowledge graph's entities, whether or not their namespace is a known one (``<http://example.org/x>``).

    Each ``{ }`` group keeps its own state (a group inside a FILTER's ``EXISTS`` holds triples again);
    a property path (``s:p/^s:q``, ``(s:a|s:b)``, ``!s:p``) is read as one predicate."""
    found: set[int] = set()
    stack = [_Group()]
    values_next, after_type = False, False
    for i, token in enumerate(code):
        text, kind = token.text, token.kind
        group = stack[-1]
        previous = code[i - 1].text.lower() if i else ""
        if text == "{":
            stack.append(_Group(values=values_next))
            values_next = False
            continue
        if text == "}":
            if len(stack) > 1:
                stack.pop()
            stack[-1].role = "s"
            continue
        if kind == "word" and text.lower() == "values":
            values_next = True
            continue
        if text in ("(", ")") and (group.path or (group.role == "p" and not group.depth)):
            group.path += 1 if text == "(" else -1  # brackets of a property path
            if not group.path:
                group.role, after_type = "o", False  # the path is read: its object comes
            continue
        if text in ("(", ")"):
            group.depth = group.depth + 1 if text == "(" else max(group.depth - 1, 0)
            continue
        if kind == "word" and text != "a":
            group.role = "s"  # FILTER, OPTIONAL, UNION, BIND ...: what follows starts afresh
            continue
        if kind in ("iri", "pname"):
            keep = (previous == "^^" or previous in _NAMING_KEYWORDS
                    or (i + 1 < len(code) and code[i + 1].text == "("))  # a datatype, a graph, a function
            nested = group.depth > 0 or group.values
            in_triple = len(stack) > 1 and group.role in ("s", "o") and not (group.role == "o" and after_type)
            if not keep and (nested or in_triple):
                found.add(i)
        if group.depth or group.values or len(stack) == 1 or previous == "^^":
            continue
        if text in _PATH_PUNCT and group.role in ("p", "o"):
            group.role = "p"
        elif text == ".":
            group.role = "s"
        elif text in (";", "[", "]"):
            group.role = "p"
        elif text == ",":
            group.role = "o"
        elif kind in ("iri", "pname", "var", "string", "number") or text == "a":
            if group.role == "s":
                group.role = "p"
            elif group.role == "p" and not group.path:
                group.role, after_type = "o", text in _TYPE
    return found


def assign_splits(templates: Sequence[str], fractions: Sequence[float] = DEFAULT_FRACTIONS,
                  seed: int = 1, fixed: dict[str, str] | None = None) -> list[str]:
    """The split of each pair, given each pair's template: whole templates dealt as the module says.
    ``fixed``: templates already dealt (an earlier split of a corpus that grew) stay in their split; only the
    others are dealt, towards the fractions of the whole."""
    if len(fractions) != len(SPLITS) or any(f < 0 for f in fractions) or not abs(sum(fractions) - 1.0) < 1e-6:
        raise ValueError(f"split fractions must be three shares (train, validation, test) summing to 1, got {fractions}")
    fixed = fixed or {}
    members: dict[str, list[int]] = defaultdict(list)
    for index, template in enumerate(templates):
        members[template].append(index)
    sizes = [0] * len(SPLITS)
    out = [""] * len(templates)
    for template in members.keys() & fixed.keys():
        sizes[SPLITS.index(fixed[template])] += len(members[template])
        for index in members[template]:
            out[index] = fixed[template]
    order = sorted(members.keys() - fixed.keys())
    random.Random(seed).shuffle(order)
    for template in order:
        # the split furthest below its share of what has been dealt so far (plus this template)
        dealt = sum(sizes) + len(members[template])
        pick = max(range(len(SPLITS)), key=lambda s: (fractions[s] * dealt - sizes[s], -s))
        sizes[pick] += len(members[template])
        for index in members[template]:
            out[index] = SPLITS[pick]
    return out


def _earlier_splits(folder: Path, ids: Sequence[str], templates: Sequence[str]) -> dict[str, str]:
    """Template -> split, for the templates of the pairs that the splits in ``folder`` already hold."""
    template_of = dict(zip(ids, templates))
    fixed: dict[str, str] = {}
    for name in SPLITS:
        path = folder / f"{name}.parquet"
        if path.is_file():
            for pair_id in pq.read_table(path, columns=["id"]).column("id").to_pylist():
                if pair_id in template_of:
                    fixed.setdefault(template_of[pair_id], name)
    return fixed


def split_corpus(corpus: str | Path, fractions: Sequence[float] = DEFAULT_FRACTIONS, seed: int = 1) -> dict[str, Any]:
    """Split a finished corpus's pairs by template (``write_template_splits``), record the splits in its
    manifest and write its card again, so that its front matter names them; returns the summary. A corpus
    split before keeps its splits (and their fractions and seed): only templates new to it are dealt, so a
    parser trained on an earlier train split never meets one of its pairs in the new test split. (A template
    whose earlier pairs sit in two splits, as SQL conditions in two orders did before they were one
    template, goes to the first of them, train before validation before test: no template spans two.)"""
    from qgen.io.output_folder import claimed_folder
    from qgen.synth.card import write_card
    from qgen.synth.corpus import CORPUS_FOLDER, CorpusError

    out = Path(corpus)
    manifest_path = out / "manifest.json"
    if not manifest_path.is_file():
        raise ValueError(f"{out} is not a finished corpus (no complete manifest.json): synthesize it first")
    # Held like a synthesis run holds it: another run claiming the folder meanwhile would delete the
    # files written here half-way (its leftovers, to it).
    with claimed_folder(out, CORPUS_FOLDER, CorpusError):
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("status") != "complete":
            raise ValueError(f"{out} is not a finished corpus (no complete manifest.json): synthesize it first")
        earlier = manifest.get("splits")
        summary = (write_template_splits(out, earlier["fractions"], earlier["seed"], keep_earlier=True) if earlier
                   else write_template_splits(out, fractions, seed))
        manifest["splits"] = summary
        write_card(out, manifest, manifest["settings"]["seed"])
        write_file(manifest_path, json.dumps(manifest, indent=2))
    return summary


def write_template_splits(corpus: str | Path, fractions: Sequence[float] = DEFAULT_FRACTIONS,
                          seed: int = 1, keep_earlier: bool = False) -> dict[str, Any]:
    """Split a finished corpus's pairs by template into ``<corpus>/splits/``; returns the summary.
    ``keep_earlier``: the templates of the splits already there keep their split (a corpus that grew: a
    parser trained on the old train split must not meet its pairs in the new test split)."""
    out = Path(corpus)
    shards = sorted((out / "pairs").glob("part-*.parquet"))
    if not shards:
        raise FileNotFoundError(f"{out / 'pairs'} holds no pair shards: split a finished corpus")
    table = pa.concat_tables([pq.read_table(p) for p in shards])
    types, forms = table.column("lf_type").to_pylist(), table.column("logical_form").to_pylist()
    templates = [lf_template(t, lf) for t, lf in zip(types, forms)]
    folder = out / FOLDER
    fixed = _earlier_splits(folder, table.column("id").to_pylist(), templates) if keep_earlier else {}
    splits = assign_splits(templates, fractions, seed, fixed)
    folder.mkdir(exist_ok=True)
    summary: dict[str, Any] = {"by": "template", "folder": FOLDER, "fractions": list(fractions), "seed": seed,
                               "splits": {}}
    for name in SPLITS:
        rows = [i for i, s in enumerate(splits) if s == name]
        part = table.take(pa.array(rows, type=pa.int64())) if rows else table.schema.empty_table()
        tmp = folder / f".{name}.parquet.tmp"
        pq.write_table(part, tmp)
        tmp.replace(folder / f"{name}.parquet")
        summary["splits"][name] = {"pairs": len(rows), "templates": len({templates[i] for i in rows})}
    # The summary goes in the manifest (split_corpus), not beside the splits: a folder of Parquet files only
    # is what pandas, pyarrow and duckdb read as one dataset. (Earlier versions wrote it here.)
    (folder / "templates.json").unlink(missing_ok=True)
    return summary
