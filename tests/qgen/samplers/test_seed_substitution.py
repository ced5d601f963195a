"""Graph-free entity substitution among seed queries (qgen.samplers.seed_substitution)."""
from __future__ import annotations

import json

from qgen.datasets.records import RawExample
from qgen.samplers import SamplerStats
from qgen.samplers.seed_substitution import SeedSubstitutionConfig, substitute_among_seeds, topic_role

NS = "PREFIX ns: <http://rdf.freebase.com/ns/>\n"


def seed(qid: str, body: str, names: dict[str, str], lf_type: str = "sparql", topic: str | None = None) -> RawExample:
    raw = {"Parses": [{"ParseId": qid, "TopicEntityMid": topic}]} if topic else {}
    return RawExample(id=qid, split="train", lf_type=lf_type, logical_form=NS + f"SELECT DISTINCT ?x WHERE {{ {body} }}",
                      question="q", source="webqsp", raw=json.dumps(raw), names=names)


# Two people with siblings (one query also asks for the brothers only), a country with languages.
SIBLINGS = seed("s1", "ns:m.01 ns:people.person.sibling_s ?y . ?y ns:people.sibling_relationship.sibling ?x .",
                {"m.01": "Justin Bieber"})
BROTHERS = seed("s2", "FILTER (?x != ns:m.02) ns:m.02 ns:people.person.sibling_s ?y . "
                      "?y ns:people.sibling_relationship.sibling ?x . ?x ns:people.person.gender ns:m.05 .",
                {"m.02": "Miley Cyrus", "m.05": "Male"})
LANGUAGES = seed("s3", "ns:m.03 ns:location.country.languages_spoken ?x .", {"m.03": "Jamaica"})
# The same relation with the entity as object: people born in a place is not a person's siblings.
BORN_IN = seed("s4", "?x ns:people.person.place_of_birth ns:m.04 .", {"m.04": "Berlin"})
# Two named objects: the record declares which is the topic (WebQSP's TopicEntityMid).
ALSO_BORN_IN = seed("s5", "?x ns:people.person.place_of_birth ns:m.06 . ?x ns:people.person.gender ns:m.05 .",
                    {"m.06": "Paris", "m.05": "Male"}, topic="m.06")


def test_topic_role_is_the_named_topic_in_its_first_triple() -> None:
    role = topic_role(BROTHERS)
    assert role is not None and role.topic == "http://rdf.freebase.com/ns/m.02" and role.name == "Miley Cyrus"
    assert (role.relation, role.role) == ("http://rdf.freebase.com/ns/people.person.sibling_s", "subject")
    born = topic_role(BORN_IN)
    assert born is not None and (born.relation.rsplit("/", 1)[1], born.role) == ("people.person.place_of_birth", "object")
    assert topic_role(seed("u", "?x ns:people.person.sibling_s ?y .", {})) is None  # no entity named
    assert topic_role(ALSO_BORN_IN).name == "Paris"
    assert topic_role(seed("g", ALSO_BORN_IN.logical_form.split("{")[1][:-1], ALSO_BORN_IN.names, topic="m.05")).name == "Male"


def test_topics_swap_only_within_the_same_relation_and_role() -> None:
    stats = SamplerStats()
    out = substitute_among_seeds([SIBLINGS, BROTHERS, LANGUAGES, BORN_IN, ALSO_BORN_IN], 100, stats=stats)
    by_seed = {json.loads(r.raw)["seed_id"]: r for r in out}
    assert set(by_seed) == {"s1", "s2", "s4", "s5"}  # Jamaica is the only country: nothing to swap it with
    brothers_of_bieber = by_seed["s2"]
    assert "ns:m.01 ns:people.person.sibling_s" in brothers_of_bieber.logical_form
    assert "ns:m.02" not in brothers_of_bieber.logical_form and "FILTER (?x != ns:m.01)" in brothers_of_bieber.logical_form
    assert brothers_of_bieber.names == {"m.01": "Justin Bieber", "m.05": "Male"}
    assert "ns:m.06" in by_seed["s4"].logical_form and by_seed["s4"].names == {"m.06": "Paris"}
    assert all(r.split == "synthetic" and r.lf_type == "sparql" and r.question is None and r.answers == [] for r in out)
    assert stats.kept == len(out) == 4 and stats.accounted()


def test_duplicates_unsampleable_seeds_and_limits_are_counted() -> None:
    twin = seed("s6", "ns:m.07 ns:people.person.sibling_s ?y . ?y ns:people.sibling_relationship.sibling ?x .",
                {"m.07": "Ariana Grande"})  # SIBLINGS' shape: swapping their topics gives each other's query
    no_topic = seed("s7", "?x ns:people.person.sibling_s ?y .", {})
    not_sparql = seed("s8", "", {}, lf_type="sql")
    broken = RawExample(id="s9", split="train", lf_type="sparql", logical_form="SELECT ?x WHERE {", question="q",
                        source="webqsp", raw="{}", names={})
    stats = SamplerStats()
    out = substitute_among_seeds([SIBLINGS, twin, no_topic, not_sparql, broken], 100, stats=stats)
    assert out == [] and stats.duplicates == 2 and stats.unsampleable == 2 and stats.errors + stats.refused == 1
    assert stats.accounted()
    seeds = [SIBLINGS, BROTHERS, twin]
    one_each = [json.loads(r.raw)["seed_id"] for r in substitute_among_seeds(seeds, 100, SeedSubstitutionConfig(per_seed=1))]
    assert len(one_each) == len(set(one_each)) == 2  # SIBLINGS and the twin both turn into Miley Cyrus's siblings
    assert len(substitute_among_seeds(seeds, 2)) == 2
    first = [r.logical_form for r in substitute_among_seeds(seeds, 100, SeedSubstitutionConfig(seed=4))]
    assert first == [r.logical_form for r in substitute_among_seeds(seeds, 100, SeedSubstitutionConfig(seed=4))]
