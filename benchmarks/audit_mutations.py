"""How many meaning-changing edits of gold pairs the faithfulness audit lets through (``qgen/synth/audit.py``).

    python benchmarks/audit_mutations.py [--data-dir DIR] [--n 300] [--seed 0]

From the gold pairs whose own question passes the audit (WikiSQL dev for SQL; WebQSP test and
ComplexWebQuestions test for SPARQL), each row applies one minimal edit that changes the meaning, to the
question ("q:": "more than" for "less than", a number changed, a sibling attribute "home" for "away") or to
the query ("lf:": an aggregate dropped, "=" made "!=", a FILTER NOT EXISTS added), to up to ``--n`` pairs,
and counts the edited pairs that still pass: the audit's false passes. ``audit_gold.py`` measures the other
side (faithful gold questions that fail). Prints the table and writes ``benchmarks/results/audit-mutations.json``
(the command, the commit, per row the pairs tried and still passing, and a few passing examples). Datasets
default to ``$QGEN_DATASETS`` or ``../shared/datasets``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit_gold import tokenized_pairs  # noqa: E402 (beside this script)
from parsers import LogicalFormError, tokenize_lf  # noqa: E402
from qgen.synth.audit import audit_pair  # noqa: E402
from qgen.version import code_version  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "audit-mutations.json"
EXAMPLES_KEPT = 3  # passing examples recorded per row
G: dict[str, list[dict]] = {}  # gold pairs by dataset, set by main()


def gold(data_dir: Path) -> dict[str, list[dict]]:
    """The gold pairs whose logical form tokenizes, by dataset."""
    return {name: [dict(id=r.id, lf_type=r.lf_type, lf=r.logical_form, toks=tokens, q=r.question, names=dict(r.names))
                   for r, tokens in tokenized_pairs(name, split, data_dir)]
            for name, split in [("wikisql", "dev"), ("webqsp", "test"), ("cwq", "test")]}


def audit(row: dict, question: str) -> tuple[str, ...]:
    return audit_pair(row["lf_type"], row["lf"], row["toks"], question).failures


# ----------------------------------------------------------------------------------------- helpers
CMP_FLIP = {"more": "less", "less": "more", "greater": "smaller", "smaller": "larger", "larger": "smaller",
            "higher": "lower", "lower": "higher", "over": "under", "under": "over",
            "above": "below", "below": "above", "after": "before", "before": "after", "later": "earlier",
            "earlier": "later", "fewer": "more", "longer": "shorter", "shorter": "longer", "older": "younger",
            "younger": "older", "newer": "older", "at least": "at most", "at most": "at least",
            "exceeding": "below", "exceeds": "is below", "since": "before", "prior to": "after", "beyond": "below",
            "bigger": "smaller", "taller": "shorter", "more recent": "earlier"}
SUP_FLIP = {"highest": "lowest", "lowest": "highest", "largest": "smallest", "smallest": "largest",
            "biggest": "smallest", "greatest": "least", "most": "least", "least": "most", "fewest": "most",
            "maximum": "minimum", "minimum": "maximum", "max": "min", "min": "max", "latest": "earliest",
            "earliest": "latest", "newest": "oldest", "oldest": "newest", "youngest": "oldest",
            "longest": "shortest", "shortest": "longest", "tallest": "shortest", "top": "bottom",
            "best": "worst", "worst": "best", "first": "last", "last": "first", "most recent": "earliest",
            "most recently": "first"}
SUP_WORDS = sorted(set(SUP_FLIP) - {"max", "min", "best", "worst"}, key=len, reverse=True)


def swap_words(q, mapping, skip_at=False):
    keys = sorted(mapping, key=len, reverse=True)
    pat = re.compile(r"\b(" + "|".join(re.escape(k) for k in keys) + r")\b", re.I)

    def rep(m):
        w = m.group(1)
        if skip_at and q[max(0, m.start() - 3):m.start()].lower() == "at ":
            return w  # "at least" / "at most" are comparisons, not superlatives
        out = mapping[w.lower()]
        return out.capitalize() if w[0].isupper() else out
    return pat.sub(rep, q)


def num_val(s):
    try:
        return Decimal(s.replace(",", ""))
    except Exception:
        return None


def find_number(q, value):
    """Spans in q of numbers equal to value (Decimal)."""
    return [m.span() for m in re.finditer(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])", q) if num_val(m.group()) == value]


def toks(lf, lf_type, names):
    try:
        return list(tokenize_lf(lf, lf_type, names=names).tokens)
    except LogicalFormError:
        return None


# ----------------------------------------------------------------------------------------- SQL
COND = re.compile(r'("(?:[^"]|"")*") (=|>|<) (\'(?:[^\']|\'\')*\'|-?[\d.]+(?:e[+-]?\d+)?)')
SEL = re.compile(r'^SELECT (?:(COUNT|MAX|MIN|SUM|AVG)\()?("(?:[^"]|"")*")\)? FROM')


def conds(lf):
    return [(m.span(), m.group(1), m.group(2), m.group(3)) for m in COND.finditer(lf)]


def lit_text(lit):
    return lit[1:-1].replace("''", "'") if lit.startswith("'") else lit


def lit_num(lit):
    t = lit_text(lit)
    v = num_val(t) if re.fullmatch(r"-?\d[\d,]*(\.\d+)?", t) else None
    return v


def replace_span(s, span, new):
    return s[:span[0]] + new + s[span[1]:]


def find_literal(q, lit):
    """Span of the literal in the question (number-aware, case-insensitive)."""
    v = lit_num(lit)
    if v is not None:
        sp = find_number(q, v)
        return sp[0] if sp else None
    m = re.search(r"(?<!\w)" + re.escape(lit_text(lit)) + r"(?!\w)", q, re.I)
    return m.span() if m else None


CMP_DROP = [r"\b(?:more|greater|larger|bigger|higher|less|fewer|smaller|lower|later|earlier|longer|shorter|older|younger|newer)"
            r" than(?: or equal to)?\s+",
            r"\bat (?:least|most)\s+",
            r"\s+or (?:more|less|fewer|greater|higher|lower|above|below|earlier|later|larger|smaller|before|after|over|under)\b",
            r"\s+and (?:above|below|over|under|higher|lower|up|more|less)\b",
            r"\b(?:over|under|above|below|after|before|since|exceeding|beyond|prior to|within)\s+(?=[$\d])"]


def drop_cmp(q):
    for p in CMP_DROP:
        q = re.sub(p, "", q, flags=re.I)
    return q


ADD_PHRASES = ["more than", "over", "at least", "higher than", "later than", "since", "less than", "under",
               "at most", "lower than", "before", "below"]


def registry(table: dict):
    """A decorator that records an edit function in ``table`` under the given row name."""
    def named(name):
        def record(f):
            table[name] = f
            return f
        return record
    return named


def sql_mutations(rng, tables):
    S: dict = {}
    m = registry(S)

    @m("sql q: comparison word flipped (more<->less, over<->under ...)")
    def _(r):
        if not any(op in "<>" for *_, op, _l in conds(r['lf'])):
            return None
        q = swap_words(r['q'], CMP_FLIP)
        return (r['lf'], q) if q != r['q'] else None

    @m("sql q: comparison phrase dropped ('more than 5' -> '5')")
    def _(r):
        if not any(op in "<>" for *_, op, _l in conds(r['lf'])):
            return None
        q = drop_cmp(r['q'])
        return (r['lf'], q) if q != r['q'] else None

    def said_condition(r, keep):
        """One of the query's conditions that ``keep`` accepts, drawn at random, and where the question says its
        value; None where there is none or the question does not say it."""
        cs = [c for c in conds(r['lf']) if keep(c)]
        if not cs:
            return None
        c = rng.choice(cs)
        sp = find_literal(r['q'], c[3])
        return (c, sp) if sp else None

    @m("sql q: comparison added before an '=' number (random phrase)")
    def _(r):
        found = said_condition(r, lambda c: c[2] == "=" and lit_num(c[3]) is not None)
        if not found:
            return None
        c, sp = found
        ph = rng.choice(ADD_PHRASES)
        return r['lf'], r['q'][:sp[0]] + ph + " " + r['q'][sp[0]:], ph

    def rewrite_comparison(r, operator):
        """The query with one of its comparisons given another operator (``operator(op)``); the question kept."""
        cs = [c for c in conds(r['lf']) if c[2] in "<>"]
        if not cs:
            return None
        c = rng.choice(cs)
        return replace_span(r['lf'], c[0], f"{c[1]} {operator(c[2])} {c[3]}"), r['q']

    @m("sql lf: '>'/'<' -> '=' (question keeps its comparison)")
    def _(r):
        return rewrite_comparison(r, lambda op: "=")

    @m("sql lf: strict '>' -> '>=' ('<' -> '<=')")
    def _(r):
        return rewrite_comparison(r, lambda op: op + "=")

    @m("sql q: number literal changed (n -> n+7)")
    def _(r):
        cs = [c for c in conds(r['lf']) if lit_num(c[3]) is not None]
        if not cs:
            return None
        c = rng.choice(cs)
        v = lit_num(c[3])
        sp = find_number(r['q'], v)
        if not sp:
            return None
        new = str(int(v) + 7) if v == int(v) else str(v + 7)
        q = r['q']
        for s in reversed(sp):
            q = replace_span(q, s, new)
        return r['lf'], q

    string_lits = defaultdict(list)
    for r in G['wikisql']:
        for c in conds(r['lf']):
            if lit_num(c[3]) is None and c[3].startswith("'"):
                string_lits[c[1]].append(lit_text(c[3]))
    all_strings = [s for v in string_lits.values() for s in v]

    @m("sql q: string literal replaced by another value (same column name if possible)")
    def _(r):
        found = said_condition(r, lambda c: lit_num(c[3]) is None)
        if not found:
            return None
        c, sp = found
        pool = [s for s in string_lits.get(c[1], []) if s.lower() != lit_text(c[3]).lower()] or all_strings
        return r['lf'], replace_span(r['q'], sp, rng.choice(pool))

    @m("sql q: one condition's clause deleted (query has >=2 conditions)")
    def _(r):
        cs = conds(r['lf'])
        if len(cs) < 2:
            return None
        c = rng.choice(cs)
        sp = find_literal(r['q'], c[3])
        if not sp:
            return None
        # delete the literal and up to 4 words before it, back to a clause boundary
        before = r['q'][:sp[0]]
        words = before.rstrip().split(" ")
        k = 0
        while words and k < 4 and words[-1].lower().strip(",") not in ("and", "with", "when", "where", "that", "which", "who", "whose", "for", "in", "of", "has", "had", "is", "was"):
            words.pop(); k += 1
        if words and words[-1].lower().strip(",") in ("and", "with", "when", "where", "whose", "for", "in", "of"):
            words.pop()
        q = (" ".join(words) + " " + r['q'][sp[1]:].lstrip(" ")).strip()
        q = re.sub(r"\s+([?.,])", r"\1", q)
        return r['lf'], q

    @m("sql lf: WHERE column swapped for another column of the table")
    def _(r):
        hdr = tables.get(r['id'])
        cs = conds(r['lf'])
        if not hdr or not cs:
            return None
        c = rng.choice(cs)
        used = {x[1] for x in cs}
        pool = ['"' + h.replace('"', '""') + '"' for h in hdr]
        pool = [p for p in pool if p not in used and p not in r['lf'][:r['lf'].find(' FROM ')]]
        if not pool:
            return None
        return replace_span(r['lf'], c[0], f"{rng.choice(pool)} {c[2]} {c[3]}"), r['q']

    SIB = {"home": "away", "away": "home", "gold": "silver", "silver": "bronze", "bronze": "gold",
           "wins": "losses", "losses": "wins", "won": "lost", "lost": "won", "winner": "runner-up",
           "runner-up": "winner", "for": "against", "against": "for", "home team": "away team",
           "away team": "home team", "opponent": "team", "team": "opponent", "winning": "losing",
           "drawn": "lost", "draws": "losses", "first": "second", "second": "first", "1st": "2nd", "2nd": "1st"}

    def sib_col(col, hdr):
        """A sibling of a column present in the same table (Home team -> Away team, Gold -> Silver)."""
        name = col[1:-1].replace('""', '"')
        for w, v in SIB.items():
            mm = re.search(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])", name, re.I)
            if mm:
                new = name[:mm.start()] + (v.capitalize() if name[mm.start()].isupper() else v) + name[mm.end():]
                for h in hdr:
                    if h.lower() == new.lower() and h != name:
                        return '"' + h.replace('"', '""') + '"', w, v
        return None

    @m("sql lf: WHERE column -> sibling column (Home team->Away team, Gold->Silver, Wins->Losses)")
    def _(r):
        hdr = tables.get(r['id'])
        if not hdr:
            return None
        opts = [(c, sib_col(c[1], hdr)) for c in conds(r['lf'])]
        opts = [(c, s) for c, s in opts if s and s[0] not in r['lf']]
        if not opts:
            return None
        c, s = rng.choice(opts)
        return replace_span(r['lf'], c[0], f"{s[0]} {c[2]} {c[3]}"), r['q'], f"{c[1]}->{s[0]}"

    @m("sql lf: SELECT column -> sibling column (Home team score->Away team score ...)")
    def _(r):
        hdr = tables.get(r['id'])
        mm = SEL.match(r['lf'])
        if not hdr or not mm:
            return None
        s = sib_col(mm.group(2), hdr)
        if not s or s[0] in r['lf']:
            return None
        return replace_span(r['lf'], mm.span(2), s[0]), r['q'], f"{mm.group(2)}->{s[0]}"

    @m("sql q: attribute word swapped in the question (home<->away, gold->silver, wins<->losses ...)")
    def _(r):
        lfl = r['lf'].lower()
        keys = [k for k in SIB if " " not in k and len(k) > 3]
        ms = [mm for mm in re.finditer(r"\b(" + "|".join(map(re.escape, keys)) + r")\b", r['q'], re.I)
              if mm.group(1).lower() in lfl and SIB[mm.group(1).lower()] not in lfl
              and not any(mm.group(1).lower() in lit_text(c[3]).lower() for c in conds(r['lf']))]
        if not ms:
            return None
        mm = rng.choice(ms)
        return r['lf'], replace_span(r['q'], mm.span(), SIB[mm.group(1).lower()]), mm.group(1).lower()

    @m("sql lf: SELECT column swapped for another column of the table")
    def _(r):
        hdr = tables.get(r['id'])
        mm = SEL.match(r['lf'])
        if not hdr or not mm:
            return None
        pool = ['"' + h.replace('"', '""') + '"' for h in hdr]
        pool = [p for p in pool if p != mm.group(2) and p not in {c[1] for c in conds(r['lf'])}]
        if not pool:
            return None
        return replace_span(r['lf'], mm.span(2), rng.choice(pool)), r['q']

    for src in ["COUNT", "MAX", "MIN", "SUM", "AVG"]:
        def f(r, src=src):
            mm = SEL.match(r['lf'])
            if not mm or mm.group(1) != src:
                return None
            dst = rng.choice([a for a in ["COUNT", "MAX", "MIN", "SUM", "AVG"] if a != src])
            return replace_span(r['lf'], mm.span(1), dst), r['q'], f"{src}->{dst}"
        S[f"sql lf: aggregate {src} -> another aggregate"] = f

    @m("sql lf: aggregate dropped (question still says how many/highest/...)")
    def _(r):
        mm = SEL.match(r['lf'])
        if not mm or not mm.group(1):
            return None
        return "SELECT " + mm.group(2) + r['lf'][mm.end() - 5:], r['q'], mm.group(1)

    @m("sql lf: aggregate added to a plain SELECT")
    def _(r):
        mm = SEL.match(r['lf'])
        if not mm or mm.group(1):
            return None
        a = rng.choice(["COUNT", "MAX", "MIN", "SUM", "AVG"])
        return f"SELECT {a}({mm.group(2)})" + r['lf'][mm.end() - 5:], r['q'], a

    @m("sql q: superlative flipped (highest<->lowest ...) for MAX/MIN")
    def _(r):
        mm = SEL.match(r['lf'])
        if not mm or mm.group(1) not in ("MAX", "MIN"):
            return None
        q = swap_words(r['q'], SUP_FLIP, skip_at=True)
        return (r['lf'], q) if q != r['q'] else None

    @m("sql q: 'how many' added to a non-COUNT question")
    def _(r):
        mm = SEL.match(r['lf'])
        if not mm or mm.group(1) == "COUNT":
            return None
        q = re.sub(r"^(what|which|who|name)( is| was| are| were)?( the)?\b", "How many", r['q'], count=1, flags=re.I)
        return (r['lf'], q) if q != r['q'] and "how many" not in r['q'].lower() else None

    @m("sql lf: '=' -> '!=' (negation the question does not say)")
    def _(r):
        cs = [c for c in conds(r['lf']) if c[2] == "="]
        if not cs:
            return None
        c = rng.choice(cs)
        return replace_span(r['lf'], c[0], f"{c[1]} != {c[3]}"), r['q']

    return S


# ----------------------------------------------------------------------------------------- SPARQL
PRED = re.compile(r"ns:([a-z_0-9]+\.[a-z_0-9.]+[a-z_0-9])")
ENT_TRIPLE = re.compile(r"(\?\w+) (ns:[a-z_0-9.]+) (ns:m\.[\w]+) ?\.")


def body(lf):
    return lf.split("WHERE", 1)[1] if "WHERE" in lf else lf


def sparql_cmps(r):
    from qgen.synth.audit import _facts
    return _facts('sparql', r['lf'], r['toks'])[1]


def sparql_mutations(rng):
    P: dict = {}
    m = registry(P)

    all_names = sorted({n for d in ("webqsp", "cwq") for r in G[d] for n in r['names'].values() if len(n) > 3})
    preds = sorted({p for d in ("webqsp", "cwq") for r in G[d] for p in PRED.findall(body(r['lf']))
                    if not p.startswith(("m.", "g."))})

    @m("sparql q: entity name replaced by another entity's name")
    def _(r):
        present = [n for n in r['names'].values() if re.search(r"(?<!\w)" + re.escape(n) + r"(?!\w)", r['q'], re.I)]
        if not present:
            return None
        n = rng.choice(present)
        new = rng.choice([x for x in all_names if x.lower() != n.lower()])
        return r['lf'], re.sub(r"(?<!\w)" + re.escape(n) + r"(?!\w)", new, r['q'], count=1, flags=re.I)

    @m("sparql lf: a predicate replaced by another Freebase predicate")
    def _(r):
        ps = [p for p in PRED.findall(body(r['lf'])) if not p.startswith(("m.", "g.", "common.topic"))
              and p.count(".") >= 2]
        if not ps:
            return None
        p = rng.choice(ps)
        new = rng.choice([x for x in preds if x != p and x.count(".") >= 2])
        return r['lf'].replace("ns:" + p, "ns:" + new), r['q'], f"{p} -> {new}"

    REL_SWAP = {"wife": "mother", "husband": "father", "mother": "wife", "father": "son", "son": "father",
                "daughter": "mother", "children": "parents", "kids": "parents", "parents": "children",
                "born": "buried", "die": "live", "died": "lived", "buried": "born", "capital": "largest city",
                "currency": "language", "language": "currency", "languages": "currencies", "religion": "language",
                "president": "vice president", "wrote": "read", "college": "high school", "school": "church",
                "played": "coached", "married": "divorced", "invented": "bought",
                "brother": "sister", "sister": "brother", "siblings": "children", "coach": "owner",
                "speak": "eat", "spoken": "eaten", "mascot": "owner", "team": "sponsor", "author": "reader",
                "live": "die", "lives": "dies", "located": "banned", "country": "city", "city": "country",
                "state": "city", "timezone": "currency", "time zone": "currency", "where": "when", "when": "where",
                "who": "what", "actor": "director", "director": "actor", "play": "write", "star": "direct",
                "starred": "directed", "directed": "wrote", "founded": "dissolved", "influenced": "opposed"}

    @m("sparql q: relation word swapped (wife->mother, born->buried, where->when ...)")
    def _(r):
        keys = sorted(REL_SWAP, key=len, reverse=True)
        ms = list(re.finditer(r"\b(" + "|".join(map(re.escape, keys)) + r")\b", r['q'], re.I))
        # leave entity names alone
        ms = [mm for mm in ms if not any(mm.group(1).lower() in n.lower().split() for n in r['names'].values())]
        if not ms:
            return None
        mm = rng.choice(ms)
        return r['lf'], replace_span(r['q'], mm.span(), REL_SWAP[mm.group(1).lower()]), mm.group(1).lower()

    def has_order(r):
        return re.search(r"ORDER BY", r['lf'], re.I) and re.search(r"LIMIT\s+1\b", r['lf'])

    @m("sparql lf: ORDER BY direction flipped (DESC <-> ASC)")
    def _(r):
        if not has_order(r):
            return None
        lf = r['lf']
        mm = re.search(r"ORDER BY\s+(DESC|ASC)?\s*(\()", lf, re.I)
        if mm and mm.group(1) and mm.group(1).upper() == "DESC":
            lf2 = lf[:mm.start(1)] + "ASC" + lf[mm.end(1):]
        elif mm and mm.group(1):
            lf2 = lf[:mm.start(1)] + "DESC" + lf[mm.end(1):]
        else:
            mm = re.search(r"ORDER BY\s+(\S.*?)\s*\n?\s*LIMIT", lf, re.I | re.S)
            if not mm:
                return None
            lf2 = lf[:mm.start(1)] + "DESC(" + mm.group(1) + ")" + lf[mm.end(1):]
        return lf2, r['q']

    @m("sparql q: superlative flipped (latest<->earliest, most<->least ...)")
    def _(r):
        if not has_order(r):
            return None
        q = swap_words(r['q'], SUP_FLIP, skip_at=True)
        return (r['lf'], q) if q != r['q'] else None

    @m("sparql q: superlative dropped ('the last world series' -> 'the world series')")
    def _(r):
        if not has_order(r):
            return None
        q = re.sub(r"\b(" + "|".join(map(re.escape, SUP_WORDS)) + r")\s+", "", r['q'], flags=re.I)
        q = re.sub(r"\s+\b(" + "|".join(map(re.escape, SUP_WORDS)) + r")\b", "", q, flags=re.I)
        return (r['lf'], q) if q != r['q'] else None

    @m("sparql lf: LIMIT 1 -> LIMIT 5")
    def _(r):
        if not has_order(r):
            return None
        return re.sub(r"LIMIT\s+1\b", "LIMIT 5", r['lf']), r['q']

    @m("sparql lf: ORDER BY ... LIMIT 1 removed (question keeps its superlative)")
    def _(r):
        if not has_order(r):
            return None
        return re.sub(r"ORDER BY.*?LIMIT\s+1\b", "", r['lf'], flags=re.I | re.S), r['q']

    def has_cmp(r):
        return bool(sparql_cmps(r))

    @m("sparql q: comparison word flipped (before<->after ...)")
    def _(r):
        if not has_cmp(r):
            return None
        q = swap_words(r['q'], CMP_FLIP)
        return (r['lf'], q) if q != r['q'] else None

    @m("sparql q: comparison phrase dropped")
    def _(r):
        if not has_cmp(r):
            return None
        q = drop_cmp(r['q'])
        return (r['lf'], q) if q != r['q'] else None

    @m("sparql q: number/year of a typed literal changed (FILTER or EXISTS validity)")
    def _(r):
        lits = re.findall(r'"(-?[\d.]+)(?:-\d\d-\d\d)?[^"]*"\^\^xsd', r['lf'])
        years = {l.split("-")[0].split(".")[0] for l in lits}
        spans = [mm for mm in re.finditer(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])", r['q'])
                 if mm.group().replace(",", "").split(".")[0] in years]
        if not spans:
            return None
        mm = rng.choice(spans)
        v = num_val(mm.group())
        return r['lf'], replace_span(r['q'], mm.span(), str(int(v) - 7 if v == int(v) else v - 7))

    @m("sparql q: 'how many' added to a non-COUNT question")
    def _(r):
        if "count" in r['toks']:
            return None
        q = re.sub(r"^(what|which|who)( is| was| are| were)?( the)?\b", "How many", r['q'], count=1, flags=re.I)
        return (r['lf'], q) if q != r['q'] and "how many" not in r['q'].lower() else None

    @m("sparql lf: entity-constraint triple negated (FILTER NOT EXISTS {...})")
    def _(r):
        ts = [mm for mm in ENT_TRIPLE.finditer(r['lf']) if not mm.group(2).startswith("ns:common.topic")]
        if len(ts) < 1:
            return None
        mm = rng.choice(ts)
        # keep at least one triple binding the subject: only negate when the subject variable occurs elsewhere
        if r['lf'].count(mm.group(1)) < 3:
            return None
        return replace_span(r['lf'], mm.span(), "FILTER NOT EXISTS { " + mm.group(0) + " }"), r['q']

    @m("sparql lf: SELECT ?x -> SELECT (COUNT(?x)) (control: question lacks 'how many')")
    def _(r):
        if "count" in r['toks']:
            return None
        lf = re.sub(r"SELECT DISTINCT \?x", "SELECT (COUNT(DISTINCT ?x) AS ?n)", r['lf'], count=1)
        return (lf, r['q']) if lf != r['lf'] else None

    return P


# ----------------------------------------------------------------------------------------- run
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path,
                    default=Path(os.environ.get("QGEN_DATASETS", REPO.parent / "shared" / "datasets")))
    ap.add_argument("--n", type=int, default=300, help="pairs edited per row, at most")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    missing = [d for d in ("wikisql", "webqsp", "cwq") if not (a.data_dir / d).is_dir()]
    if missing:
        sys.exit(f"no {', '.join(str(a.data_dir / d) for d in missing)}: give --data-dir or $QGEN_DATASETS")
    G.update(gold(a.data_dir))
    # WikiSQL table headers per record id (dev-N = line N)
    tables_cols = json.loads((a.data_dir / "wikisql" / "tables_columns.json").read_text())
    tables = {}
    with open(a.data_dir / "wikisql" / "dev.jsonl") as fh:
        for i, line in enumerate(fh):
            if not line.strip():
                continue
            rec = json.loads(line)
            tables[f"dev-{i}"] = tables_cols.get("table_" + rec["table_id"].replace("-", "_"))
    results, examples = [], {}
    for kind, muts, sources in [("sql", sql_mutations(random.Random(a.seed), tables), ["wikisql"]),
                                ("sparql", sparql_mutations(random.Random(a.seed)), ["webqsp", "cwq"])]:
        base = [(d, r) for d in sources for r in G[d] if not audit(r, r['q'])]
        for name, f in muts.items():
            rng = random.Random(a.seed)
            cands = base[:]
            rng.shuffle(cands)
            tried = passed = 0
            by_tag = defaultdict(lambda: [0, 0])
            ex = []
            for d, r in cands:
                if tried >= a.n:
                    break
                out = f(r)
                if not out:
                    continue
                lf, q = out[0], out[1]
                tag = out[2] if len(out) > 2 else None
                if lf == r['lf']:
                    t = r['toks']
                else:
                    t = toks(lf, r['lf_type'], r['names'])
                    if t is None:
                        continue
                fails = audit({**r, 'lf': lf, 'toks': t}, q)
                tried += 1
                passed += not fails
                if tag:
                    by_tag[tag][0] += 1
                    by_tag[tag][1] += not fails
                rec = dict(src=d, id=r['id'], gold_q=r['q'], q=q, lf=(lf if lf == r['lf'] else lf),
                           lf_changed=lf != r['lf'], tag=tag, failures=list(fails))
                ex.append(rec)
            results.append(dict(mutation=name, tried=tried, passing=passed,
                                pct=round(100 * passed / tried, 1) if tried else None,
                                by_tag={k: v for k, v in sorted(by_tag.items())} if by_tag else None))
            examples[name] = ex
            print(f"{name:85s} {tried:4d} {passed:4d} {results[-1]['pct']}%", flush=True)
            if by_tag and len(by_tag) <= 12:
                print("     ", {k: f"{v[1]}/{v[0]}" for k, v in sorted(by_tag.items())})
    report = {"command": "python benchmarks/audit_mutations.py " + " ".join(sys.argv[1:]), "commit": code_version(),
              "gold": "wikisql dev (SQL); webqsp test, cwq test (SPARQL): pairs whose own question passes",
              "results": results,
              "passing_examples": {name: [e for e in ex if not e["failures"]][:EXAMPLES_KEPT]
                                   for name, ex in examples.items()}}
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
