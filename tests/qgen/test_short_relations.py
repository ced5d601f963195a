"""WebQSP relations rewritten as short names give the tokens the tokenizer gives such a query."""
from __future__ import annotations

import random

from parsers.sparql.tokenize import tokenize_sparql
from qgen.data import Pair
from qgen.short_relations import (
    drop_boilerplate,
    entity_query_pairs,
    entity_query_tokens,
    short_relation_pairs,
    shorten_relations,
)

FILTERS = "FILTER (?x != ns:m.03st9j) FILTER (!isLiteral(?x) OR lang(?x) = '' OR langMatches(lang(?x), 'en')) "
FREEBASE = ("PREFIX ns: <http://rdf.freebase.com/ns/> SELECT DISTINCT ?x WHERE { " + FILTERS +
            "ns:m.03st9j ns:location.location.containedby ?x . ?x ns:base.biblioness.bibs_location.loc_type ?sk0 . "
            "?y ns:people.person.place_of_birth ?x . FILTER (str(?sk0) = \"Country\") }")
SHORT = ("PREFIX dbo: <http://dbpedia.org/ontology/> SELECT DISTINCT ?x WHERE { " + FILTERS +
         "ns:m.03st9j dbo:containedby ?x . ?x dbo:locType ?sk0 . ?y dbo:placeOfBirth ?x . "
         "FILTER (str(?sk0) = \"Country\") }")
NAMES = {"m.03st9j": "Grand Bahama"}


def tokens(query: str) -> list[str]:
    return tokenize_sparql(query, names=NAMES).tokens


class FirstPrefix(random.Random):
    def choice(self, seq):  # always "dbo": the prefix the expected query declares
        return seq[0]


def test_shortened_tokens_are_those_of_the_query_with_short_relations() -> None:
    long, short = tokens(FREEBASE), tokens(SHORT)
    assert "people" in long and "people" not in short
    assert shorten_relations(long, FirstPrefix()) == short


BARE = ("PREFIX dbo: <http://dbpedia.org/ontology/> SELECT ?x WHERE { ns:m.03st9j dbo:containedby ?x . "
        "?x dbo:locType ?sk0 . ?y dbo:placeOfBirth ?x . FILTER (str(?sk0) = \"Country\") }")


def test_the_boilerplate_filters_go_and_the_other_filters_stay() -> None:
    bare = tokens(BARE)
    assert drop_boilerplate(tokens(SHORT), drop_distinct=True) == bare
    assert drop_boilerplate(tokens(SHORT), drop_distinct=False) == [*bare[:1], "distinct", *bare[1:]]


def test_pairs_with_nothing_to_rewrite_are_left_out_and_ids_say_short() -> None:
    with_relation = Pair("q1", tokens(FREEBASE), ["where", "is", "it", "?"], "g1")
    without = Pair("q2", tokens(BARE), ["where", "?"], "g2")
    [short] = short_relation_pairs([with_relation, without], seed=3)
    assert short.id == "q1#short" and short.group == "g1" and short.tgt == with_relation.tgt
    assert short.src[short.src.index("containedby") - 1] in {"dbo", "dbp", "schema", "foaf", "ex", "prop", "onto", "kb"}


def test_one_hop_sql_becomes_the_entity_query_the_tokenizer_reads() -> None:
    sql = "select nationality from table where player = ' terrence ross '".split()
    expected = tokens("SELECT ?x WHERE { dbr:Terrence_Ross dbo:nationality ?x }")
    assert entity_query_tokens(sql, "dbo") == expected
    for other in ("select count ( no ) from table where player = ' jalen rose '",  # an aggregate
                  "select round from table where circuit = ' assen ' and year = ' 1990 '",  # two conditions
                  "select date from table where season > ' 1990 '",  # another operator
                  "select club from table where years = ' 1995-96 '"):  # no entity: a value without letters
        assert entity_query_tokens(other.split(), "dbo") is None, other
    [pair] = entity_query_pairs([Pair("w1", sql, ["what", "nationality", "?"], "t1"),
                                 Pair("w2", "select date from table where season > ' 1990 '".split(), ["when"], "t2")])
    assert pair.id == "w1#entity" and pair.tgt == ["what", "nationality", "?"] and pair.group == "t1"
