"""An input without lf_type: its kind told from its text, or refused with a message that says why."""
from __future__ import annotations

import pytest

from parsers.lf_type import LfTypeError, infer_lf_type


@pytest.mark.parametrize("text, kind", [
    ("SELECT ?x WHERE { ns:m.0a ns:location.country.capital ?x }", "sparql"),
    ("PREFIX dbo: <http://dbpedia.org/ontology/>\nSELECT ?x WHERE { dbr:Berlin dbo:leader ?x }", "sparql"),
    ("ask { ?s ?p ?o }", "sparql"),
    ("DESCRIBE <http://example.org/a>", "sparql"),
    ("PREFIX ex: <http://example.org/>\nDESCRIBE ex:a", "sparql"),
    ("INSERT DATA { <http://example.org/a> <http://example.org/b> <http://example.org/c> }", "sparql"),
    ('SELECT "Player" FROM "table" WHERE "No." = \'3\'', "sql"),
    ("select count(name) from ferries where capacity > 300", "sql"),
    ("DELETE FROM ferries", "sql"),
    ("name[The Eagle], eatType[coffee shop], food[French]", "mr"),
    ("inform(name='red victorian bed breakfast';acceptscreditcards=yes)", "da"),
    ("?request(area)", "da"),
])
def test_each_kind_is_told_from_its_text(text: str, kind: str) -> None:
    assert infer_lf_type(text) == kind


@pytest.mark.parametrize("text, why", [
    ("who directed the matrix ?", "it matches none of them"),
    ("", "it matches none of them"),
    ("DESCRIBE users", "it matches none of them"),  # MySQL's, not SPARQL's DESCRIBE <iri>
])
def test_a_text_of_no_known_kind_is_refused_by_name(text: str, why: str) -> None:
    with pytest.raises(LfTypeError, match=why) as err:
        infer_lf_type(text)
    assert "give lf_type in the record or --lf-type" in str(err.value) and "\n" not in str(err.value)
