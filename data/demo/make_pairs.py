"""Write ``train_pairs.jsonl``: templated (logical form, question) pairs over the demo graph and tables.

The logical forms are what qgen's own samplers draw from ``demo_kg.ttl`` (the KG sampler's twelve
WebQSP shapes) and from ``ferries.csv`` / ``festivals.csv`` (the table sampler's WikiSQL shapes), so
the demo model is trained on exactly the kind of input that ``qgen demo`` later synthesizes
questions for. The questions come from the phrase tables below (one or two wordings per
predicate or column, composed along the query: hops, constraint, superlative, count). Topics in
``HELD_OUT`` never appear as the topic of a training pair, so the demo corpus also shows the model
copying names it was not trained on.

Run from the repository root: ``python data/demo/make_pairs.py`` (deterministic; seeded).
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from qgen.synth.sources import open_source

HERE = Path(__file__).resolve().parent
SCHEMA = "http://schema.org/"
DEMO = "http://example.org/qgen-demo/"
HELD_OUT = {DEMO + n for n in ("Ostwick", "Rhodan_College", "Clara_Benet", "Seven_Bridges", "Blue_Harvest")}
KG_PAIRS, TABLE_PAIRS, SEED = 320, 200, 11

# -- the graph: per predicate (noun, plural, how the noun attaches to its subject S) ------------------
NOUNS = {
    "actor": ("actor", "actors", "in {S}"), "author": ("author", "authors", "of {S}"),
    "director": ("director", "directors", "of {S}"), "alumniOf": ("university", "universities", "attended by {S}"),
    "birthPlace": ("birthplace", "birthplaces", "of {S}"), "nationality": ("home country", "home countries", "of {S}"),
    "containedInPlace": ("country", "countries", "of {S}"), "location": ("city", "cities", "of {S}"),
    "birthDate": ("birth date", "birth dates", "of {S}"), "height": ("height", "heights", "of {S}"),
    "foundingDate": ("founding date", "founding dates", "of {S}"),
    "datePublished": ("release date", "release dates", "of {S}"),
    "numberOfPages": ("page count", "page counts", "of {S}"),
}
WHAT = {  # the plain question about ?x, given the subject S
    "actor": ["who acted in {S}?", "who plays in {S}?"], "author": ["who wrote {S}?", "who is the author of {S}?"],
    "director": ["who directed {S}?", "who is the director of {S}?"],
    "alumniOf": ["where did {S} study?", "which university did {S} attend?"],
    "birthPlace": ["where was {S} born?", "what is the birthplace of {S}?"],
    "nationality": ["which country is {S} from?", "what is the nationality of {S}?"],
    "containedInPlace": ["which country is {S} in?", "in which country is {S}?"],
    "location": ["where is {S} located?", "in which city is {S}?"],
    "birthDate": ["when was {S} born?", "what is the birth date of {S}?"],
    "height": ["how tall is {S}?", "what is the height of {S}?"],
    "foundingDate": ["when was {S} founded?", "what is the founding date of {S}?"],
    "datePublished": ["when did {S} come out?", "when was {S} released?"],
    "numberOfPages": ["how many pages does {S} have?", "how long is {S} in pages?"],
}
COUNT = {
    "actor": "how many actors appear in {S}?", "author": "how many authors does {S} have?",
    "director": "how many directors does {S} have?", "alumniOf": "how many universities did {S} attend?",
    "containedInPlace": "in how many countries is {S}?", "location": "in how many cities is {S} located?",
}
RELATIVE = {  # a constraint, after a noun: "... born in Varby"
    "birthPlace": "born in {E}", "nationality": "from {E}", "alumniOf": "who studied at {E}",
    "containedInPlace": "in {E}", "location": "in {E}", "author": "written by {E}",
    "director": "directed by {E}", "actor": "starring {E}",
}
PREDICATE = {  # a constraint as the verb phrase of a question, singular and plural
    "birthPlace": ("was born in {E}", "were born in {E}"), "nationality": ("is from {E}", "are from {E}"),
    "alumniOf": ("studied at {E}", "studied at {E}"), "containedInPlace": ("is in {E}", "are in {E}"),
    "location": ("is in {E}", "are in {E}"), "author": ("was written by {E}", "were written by {E}"),
    "director": ("was directed by {E}", "were directed by {E}"), "actor": ("stars {E}", "star {E}"),
}
SUPERLATIVE = {("birthDate", "DESC"): "youngest", ("birthDate", "ASC"): "oldest",
               ("height", "DESC"): "tallest", ("height", "ASC"): "shortest",
               ("foundingDate", "ASC"): "oldest", ("foundingDate", "DESC"): "newest",
               ("datePublished", "DESC"): "most recent", ("datePublished", "ASC"): "earliest",
               ("numberOfPages", "DESC"): "longest", ("numberOfPages", "ASC"): "shortest"}


def local(iri: str) -> str:
    return iri[len(SCHEMA):] if iri.startswith(SCHEMA) else iri


def noun_phrase(pred: str, subject: str, sup: str | None = None, rel: str | None = None, plural: bool = False,
                article: str = "the") -> str:
    """'the tallest actor in Night Ferry born in Varby'."""
    noun, nouns, attach = NOUNS[pred]
    words = [article, sup, nouns if plural else noun, attach.format(S=subject), rel]
    return " ".join(w for w in words if w)


def kg_question(raw: dict, names: dict[str, str], rng: random.Random) -> str:
    topic = names[raw["topic"]]
    preds = [local(p) for p, _ in raw["hops"]]
    cvar, cpred, centity = raw["constraint"] or (None, None, None)
    ovar, opred, odir = raw["order"] or (None, None, None)
    cpred, opred = cpred and local(cpred), opred and local(opred)
    sup = SUPERLATIVE.get((opred, odir)) if opred else None
    rel = RELATIVE[cpred].format(E=names[centity]) if cpred else None
    subject = topic
    if len(preds) == 2:  # the middle node ?y, with what the query says about it
        subject = noun_phrase(preds[0], topic, sup if ovar == "y" else None, rel if cvar == "y" else None)
    last = preds[-1]
    x_rel = rel if cvar == "x" else None
    x_sup = sup if ovar == "x" else None
    if raw["count"]:
        if x_rel:
            return f"how many {noun_phrase(last, subject, plural=True, article='')} {PREDICATE[cpred][1].format(E=names[centity])}?"
        return COUNT.get(last, "how many {n} does {S} have?").format(S=subject, n=NOUNS[last][1])
    if x_sup:
        return f"{noun_phrase(last, subject, rel=x_rel, article='which')} is the {x_sup}?"
    if x_rel:
        return f"{noun_phrase(last, subject, article='which')} {PREDICATE[cpred][0].format(E=names[centity])}?"
    return rng.choice(WHAT[last]).format(S=subject)


# -- the tables: per column (the selected column's question with a slot {r} for the conditions,
# the conditions per operator, the noun for aggregates) -----------------------------------------------
TABLES = {
    "ferries": {
        "entity": ("ferry", "ferries"),
        "Ferry": ("what is the name of the ferry {r}?", {"=": "called {v}"}, "name"),
        "Home port": ("what is the home port of the ferry {r}?", {"=": "based in {v}"}, "home port"),
        "Destination": ("where does the ferry {r} sail to?", {"=": "sailing to {v}"}, "destination"),
        "Operator": ("who operates the ferry {r}?", {"=": "run by {v}"}, "operator"),
        "Capacity": ("what is the capacity of the ferry {r}?", {"=": "with a capacity of {v}",
                     ">": "carrying more than {v} passengers", "<": "carrying fewer than {v} passengers"}, "capacity"),
        "Year built": ("when was the ferry {r} built?", {"=": "built in {v}", ">": "built after {v}",
                       "<": "built before {v}"}, "year of construction"),
    },
    "festivals": {
        "entity": ("festival", "festivals"),
        "Festival": ("what is the name of the festival {r}?", {"=": "called {v}"}, "name"),
        "City": ("in which city is the festival {r} held?", {"=": "held in {v}"}, "city"),
        "Country": ("which country hosts the festival {r}?", {"=": "in {v}"}, "country"),
        "Month": ("in which month does the festival {r} take place?", {"=": "taking place in {v}"}, "month"),
        "Visitors": ("how many visitors does the festival {r} attract?", {"=": "with {v} visitors",
                     ">": "with more than {v} visitors", "<": "with fewer than {v} visitors"}, "number of visitors"),
        "First held": ("when was the festival {r} first held?", {"=": "first held in {v}",
                       ">": "first held after {v}", "<": "first held before {v}"}, "founding year"),
    },
}
AGGREGATE = {"MAX": "highest", "MIN": "lowest", "SUM": "total", "AVG": "average"}
AGG_OPS, COND_OPS = ["", "MAX", "MIN", "COUNT", "SUM", "AVG"], ["=", ">", "<"]


def table_question(raw: dict) -> str:
    table, header, sql = TABLES[raw["table"]], raw["header"], raw["sql"]
    conds = " and ".join(table[header[c]][1][COND_OPS[op]].format(v=v) for c, op, v in sql["conds"])
    column, agg = header[sql["sel"]], AGG_OPS[sql["agg"]]
    one, many = table["entity"]
    if agg == "COUNT":
        return f"how many {many} {conds} are there?"
    if agg:
        return f"what is the {AGGREGATE[agg]} {table[column][2]} of the {many} {conds}?"
    return table[column][0].format(r=conds)


def main() -> None:
    rng = random.Random(SEED)
    lines = []
    kg = open_source(from_graph=str(HERE / "demo_kg.ttl"), count=4 * KG_PAIRS, seed=SEED, max_answers=10)
    kept = 0
    for record in kg.records:
        raw = json.loads(record.raw)
        if raw["topic"] in HELD_OUT or kept == KG_PAIRS:
            continue
        kept += 1
        lines.append({"id": f"kg-{kept:04d}", "lf_type": "sparql", "lf": record.logical_form,
                      "question": kg_question(raw, record.names, rng), "names": record.names})
    tables = open_source(from_tables=[str(HERE / "ferries.csv"), str(HERE / "festivals.csv")], count=TABLE_PAIRS,
                         seed=SEED, max_answers=10)
    for n, record in enumerate(tables.records, 1):
        lines.append({"id": f"table-{n:04d}", "lf_type": "sql", "lf": record.logical_form,
                      "question": table_question(json.loads(record.raw))})
    with open(HERE / "train_pairs.jsonl", "w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"wrote {len(lines)} pairs to {HERE / 'train_pairs.jsonl'}")


if __name__ == "__main__":
    main()
