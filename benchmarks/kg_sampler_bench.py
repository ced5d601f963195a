"""KG sampler benchmark: executed, answer-checked queries per second on a 1M-triple graph (issue 4).

    python benchmarks/kg_sampler_bench.py [--triples 1000000] [--queries 20000] [--verify 100] [--out FILE]

1. builds a seeded synthetic rdflib Graph of fictional entities in Freebase's layout (names,
   countries, cities, people, marriage and job CVTs, organisations, films; typed integer, double
   and date literals) with at least ``--triples`` triples, and times it;
2. builds the in-memory ``KGIndex`` from it, and times that;
3. samples with every shape until ``--queries`` queries have been executed and answer-checked
   (1..K answers), and prints executed queries per second (drawing, writing the text, duplicate
   check, execution, answer check, names and records included);
4. runs ``--verify`` kept queries through rdflib's SPARQL engine on the same graph and checks that
   they give the same answers (and shows rdflib's own rate, the reason for the index).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rdflib import Graph, Literal, URIRef  # noqa: E402
from rdflib.namespace import XSD  # noqa: E402

from qgen.samplers.kg import KGSampler, KGSamplerConfig  # noqa: E402
from qgen.samplers.kg_index import KGIndex, answer_id  # noqa: E402
from qgen.samplers.readonly import run_sparql  # noqa: E402
from qgen.version import code_version  # noqa: E402

NS = "http://rdf.freebase.com/ns/"
_SYLLABLES = "ka lo ve ri mar tan sel dun bra qui os en ha fel mor tis val ren go lia".split()


def synthetic_graph(min_triples: int, seed: int = 0) -> Graph:
    """A fictional world with at least ``min_triples`` triples (people scale with the target)."""
    rng = random.Random(seed)
    graph = Graph()
    add = graph.add
    counter = iter(range(10**9))

    def node(kind: str, name: str | None = None) -> URIRef:
        iri = URIRef(f"{NS}m.0{next(counter):x}")
        add((iri, URIRef(NS + "type.object.type"), URIRef(NS + kind)))
        if name is not None:
            add((iri, URIRef(NS + "type.object.name"), Literal(name, lang="en")))
        return iri

    def word() -> str:
        return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()

    def day(first: int, last: int) -> Literal:
        return Literal(f"{rng.randint(first, last)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}", datatype=XSD.date)

    def p(name: str) -> URIRef:
        return URIRef(NS + name)

    countries = [node("location.country", word() + "ia") for _ in range(150)]
    for c in countries:
        add((c, p("location.statistical_region.population"), Literal(rng.randint(10**5, 10**8))))
        add((c, p("location.country.founded"), day(1600, 1990)))
    cities = []
    for _ in range(8000):
        city, country = node("location.citytown", word()), rng.choice(countries)
        cities.append(city)
        add((city, p("location.location.containedby"), country))
        add((country, p("location.location.contains"), city))
        add((city, p("location.statistical_region.population"), Literal(rng.randint(500, 5 * 10**6))))
        add((city, p("location.location.area"), Literal(round(rng.uniform(1, 900), 2), datatype=XSD.double)))
    genres = [node("film.film_genre", word()) for _ in range(40)]
    titles = [node("business.job_title", word()) for _ in range(60)]
    unions = [node("people.marriage_union_type", n) for n in ("Marriage", "Civil union", "Domestic partnership")]
    orgs = []
    for _ in range(3000):
        org = node("organization.organization", f"{word()} {rng.choice(['Works', 'Press', 'Group', 'Labs'])}")
        orgs.append(org)
        add((org, p("organization.organization.headquarters"), rng.choice(cities)))
        add((org, p("organization.organization.date_founded"), day(1800, 2015)))
        add((org, p("organization.organization.employees"), Literal(rng.randint(3, 90000))))
    people: list[URIRef] = []
    films: list[URIRef] = []
    while len(graph) < min_triples:
        person = node("people.person", f"{word()} {word()}")
        people.append(person)
        add((person, p("people.person.place_of_birth"), rng.choice(cities)))
        add((person, p("people.person.nationality"), rng.choice(countries)))
        add((person, p("people.person.date_of_birth"), day(1900, 2005)))
        if rng.random() < 0.7:
            add((person, p("people.person.height_meters"), Literal(round(rng.uniform(1.45, 2.05), 2), datatype=XSD.double)))
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            job = node("business.employment_tenure")
            add((person, p("people.person.employment_history"), job))
            add((job, p("business.employment_tenure.company"), rng.choice(orgs)))
            add((job, p("business.employment_tenure.title"), rng.choice(titles)))
            add((job, p("business.employment_tenure.from"), day(1930, 2020)))
        if len(people) > 1 and rng.random() < 0.3:
            spouse, marriage = rng.choice(people[:-1]), node("people.marriage")
            for a, b in ((person, spouse), (spouse, person)):
                add((a, p("people.person.spouse_s"), marriage))
                add((marriage, p("people.marriage.spouse"), a))
            add((marriage, p("people.marriage.from"), day(1920, 2020)))
            add((marriage, p("people.marriage.type_of_union"), rng.choice(unions)))
        if rng.random() < 0.25:
            film = node("film.film", f"The {word()} {rng.choice(['Road', 'Harbour', 'Night', 'Garden'])}")
            films.append(film)
            add((film, p("film.film.directed_by"), person))
            add((person, p("film.director.film"), film))
            add((film, p("film.film.genre"), rng.choice(genres)))
            add((film, p("film.film.release_date"), day(1920, 2024)))
            add((film, p("film.film.runtime"), Literal(rng.randint(70, 200))))
        if films and rng.random() < 0.6:
            for film in rng.sample(films, min(len(films), rng.randint(1, 3))):
                add((person, p("film.actor.film"), film))
                add((film, p("film.film.starring"), person))
    return graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=20_000, help="executed queries to time")
    parser.add_argument("--verify", type=int, default=100, help="kept queries to cross-check with rdflib")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")
    args = parser.parse_args()

    started = time.perf_counter()
    graph = synthetic_graph(args.triples, args.seed)
    graph_s = time.perf_counter() - started
    print(f"graph: {len(graph):,} triples built in {graph_s:.1f} s", flush=True)
    started = time.perf_counter()
    index = KGIndex.from_graph(graph)
    index_s = time.perf_counter() - started
    print(f"index: {len(index.terms):,} terms, {index.triples:,} triples, built in {index_s:.1f} s", flush=True)

    sampler = KGSampler(index, KGSamplerConfig(seed=args.seed, max_answers=10, inverse_rate=0.1), graph=graph)
    kept = []
    started = time.perf_counter()
    while sampler.stats.executed < args.queries:
        record = sampler.draw()
        if record is not None:
            kept.append(record)
    sample_s = time.perf_counter() - started
    stats = sampler.stats
    rate = stats.executed / sample_s
    print(f"sampling: {stats}", flush=True)

    mismatches, started = 0, time.perf_counter()
    for record in kept[: args.verify]:
        raw = json.loads(record.raw)
        rows = run_sparql(graph, record.logical_form, timeout_s=60.0)
        expected = [str(len(raw["answer_ids"]))] if raw["count"] else sorted(map(str, raw["answer_ids"]))
        got = [str(rows.rows[0][0])] if raw["count"] else sorted(answer_id(t) for t in rows.column(0))
        mismatches += got != expected
    checked = min(args.verify, len(kept))
    rdflib_rate = checked / (time.perf_counter() - started) if checked else 0.0

    results = {
        "commit": code_version(), "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "triples": len(graph), "graph_build_s": round(graph_s, 1), "index_build_s": round(index_s, 1),
        "executed": stats.executed, "kept": stats.kept, "sampling_s": round(sample_s, 2),
        "executed_per_s": round(rate), "kept_per_s": round(stats.kept / sample_s),
        "rdflib_checked": checked, "rdflib_mismatches": mismatches, "rdflib_queries_per_s": round(rdflib_rate, 1),
        "stats": stats.as_dict(),
    }
    print(f"RESULT executed_per_s={results['executed_per_s']} kept_per_s={results['kept_per_s']} "
          f"triples={len(graph)} graph_build_s={graph_s:.1f} index_build_s={index_s:.1f} "
          f"rdflib_checked={checked} rdflib_mismatches={mismatches} rdflib_queries_per_s={rdflib_rate:.1f}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
