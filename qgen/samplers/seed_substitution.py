"""Entity substitution without a graph: seed queries with their topic swapped for another seed's topic
that fills the same role of the same relation.

Where the knowledge base cannot be queried (WebQSP without Freebase), the seeds themselves say which
entities a relation takes: if one seed asks ``Justin Bieber people.person.sibling_s ?y`` and another
``Miley Cyrus people.person.sibling_s ?y``, each seed with the other's topic is a question a user could
ask (that person's siblings), written in a shape the data already uses. The topic and its pattern are
found as in ``qgen.samplers.substitution`` (the entity the seed names, in the first basic graph
pattern that holds one), or the one the record declares (WebQSP's ``TopicEntityMid``); its role is its
first triple: (relation, subject) or (relation, object). Nothing is executed, so substitutes carry no answers (their queries may have none in the
knowledge base: the pair still says what the query asks). A substitute whose query equals a seed's or
an earlier substitute's is a duplicate; a seed without a named topic in a triple is unsampleable.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Iterable

from parsers.errors import LogicalFormError
from parsers.sparql.entities import entity_id
from parsers.sparql.normalize import normalize_tokens
from qgen.datasets.records import RawExample
from qgen.samplers import SamplerStats, outcome_of, sparql_key
from qgen.samplers.readonly import prepare_query
from qgen.samplers.substitution import basic_graph_patterns, find_topic, replace_entity


@dataclass(frozen=True)
class SeedSubstitutionConfig:
    seed: int = 0
    per_seed: int = 5  # substitutes kept per seed query at most


@dataclass(frozen=True)
class TopicRole:
    topic: str  # the topic's IRI
    name: str  # its name as the seed gives it
    relation: str  # the IRI of the relation of its first triple
    role: str  # "subject" or "object" of that triple


def topic_role(seed: RawExample) -> TopicRole | None:
    """The seed's named topic and its role, or None when it has none. Raises LogicalFormError."""
    from rdflib import URIRef

    algebra = prepare_query(normalize_tokens(seed.logical_form).text).algebra
    declared = declared_topic(seed)
    if declared:
        pattern = [t for triples in basic_graph_patterns(algebra) for t in triples]
        topic = next((term for triple in pattern for term in (triple[0], triple[2])
                      if isinstance(term, URIRef) and entity_id(str(term)) == declared), None)
    else:
        topic, pattern = find_topic(algebra, seed.names)
    name = _name_of(str(topic), seed.names) if topic is not None else None
    if not name:
        return None
    for subject, relation, obj in pattern:
        if isinstance(relation, URIRef) and topic in (subject, obj):
            return TopicRole(str(topic), name, str(relation), "subject" if subject == topic else "object")
    return None


def declared_topic(seed: RawExample) -> str | None:
    """The topic entity's id that the raw record declares (WebQSP: its parse's ``TopicEntityMid``)."""
    try:
        record = json.loads(seed.raw)
    except ValueError:
        return None
    parses = record.get("Parses") if isinstance(record, dict) else None
    for parse in parses if isinstance(parses, list) else [record]:
        if isinstance(parse, dict) and parse.get("ParseId", seed.id) == seed.id and parse.get("TopicEntityMid"):
            return str(parse["TopicEntityMid"])
    return None


def substitute_among_seeds(seeds: Iterable[RawExample], count: int, config: SeedSubstitutionConfig = SeedSubstitutionConfig(),
                           stats: SamplerStats | None = None) -> list[RawExample]:
    """Up to ``count`` substitutes (split ``synthetic``), up to ``per_seed`` per seed, seeds in a seeded order."""
    stats = stats if stats is not None else SamplerStats()
    usable: list[tuple[RawExample, TopicRole]] = []
    seen: set[str] = set()
    for seed in seeds:
        if seed.load_error or seed.lf_type != "sparql":
            stats.add("unsampleable")
            continue
        try:
            role = topic_role(seed)
        except LogicalFormError as error:
            stats.add(outcome_of(error))
            continue
        seen.add(sparql_key(seed.logical_form))
        if role is None:
            stats.add("unsampleable")
        else:
            usable.append((seed, role))
    fillers: dict[tuple[str, str], dict[str, str]] = {}  # (relation, role) -> topic IRI -> name
    for _, role in usable:
        fillers.setdefault((role.relation, role.role), {})[role.topic] = role.name
    rng = random.Random(config.seed)
    rng.shuffle(usable)  # seeds in a seeded order, so the first n substitutes are a sample of them all
    out: list[RawExample] = []
    for seed, role in usable:
        if len(out) == count:
            break
        others = fillers[(role.relation, role.role)]
        candidates = sorted(iri for iri in others if iri != role.topic and _name_of(iri, seed.names) is None)
        rng.shuffle(candidates)
        kept = 0
        for candidate in candidates:
            if kept == config.per_seed or len(out) == count:
                break
            lf = replace_entity(seed.logical_form, role.topic, candidate)
            key = sparql_key(lf)
            if key in seen:
                stats.add("duplicates")
                continue
            seen.add(key)
            names = {k: v for k, v in seed.names.items() if k not in {role.topic, entity_id(role.topic)}}
            names[entity_id(candidate) or candidate] = others[candidate]
            raw = {"sampler": "seed_substitution", "seed": config.seed, "seed_id": seed.id, "replaced": role.topic,
                   "by": candidate, "relation": role.relation, "role": role.role}
            out.append(RawExample(id=f"{seed.id}~swap{kept}", split="synthetic", lf_type="sparql", logical_form=lf,
                                  question=None, source="seed_substitution", raw=json.dumps(raw, ensure_ascii=False),
                                  names=names))
            stats.add("kept")
            kept += 1
    return out


def _name_of(iri: str, names: dict[str, str]) -> str | None:
    return names.get(iri) or names.get(entity_id(iri) or "")
