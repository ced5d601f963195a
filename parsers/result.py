"""What a parser returns for one logical form (the same shape for SPARQL, SQL and MRs)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Entity:
    """An entity found in a logical form and the name that replaced it."""

    id: str  # canonical id: m.01bkb (Freebase), Q42 (Wikidata), the full IRI (DBpedia, other)
    surface: str  # as written in the logical form: ns:m.01bkb, <http://...>, dbr:Bali
    name: str  # the name whose words follow the ent: token
    name_source: str  # given | labels | comment | local_name | placeholder


@dataclass(frozen=True)
class ParsedLF:
    """A validated, tokenized logical form."""

    lf_type: str  # sparql | sql | mr | da
    logical_form: str  # the input as given
    normalized: str  # the text that was validated (Virtuoso-isms rewritten, prefixes declared)
    tokens: list[str]
    entities: list[Entity] = field(default_factory=list)
    # The tokens with every entity kept as written (``ns m . 01bkb``) instead of ``ent:`` + name:
    # the input of the seed paper's Seq2Seq baseline "without entity replacement". None = same
    # as ``tokens`` (a logical form without entities).
    raw_entity_tokens: list[str] | None = None
