"""Well-known SPARQL prefixes that public KBQA queries use without declaring them.

Virtuoso endpoints (DBpedia, the Freebase dumps) and the Wikidata Query Service predeclare these,
so queries written for them often omit the PREFIX lines; rdflib does not, so we add them.
"""
from __future__ import annotations

WELL_KNOWN_PREFIXES: dict[str, str] = {
    # W3C vocabularies
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "skos": "http://www.w3.org/2004/02/skos/core#",
    "foaf": "http://xmlns.com/foaf/0.1/",
    "dc": "http://purl.org/dc/elements/1.1/",
    "dct": "http://purl.org/dc/terms/",
    "schema": "http://schema.org/",
    "geo": "http://www.w3.org/2003/01/geo/wgs84_pos#",
    "prov": "http://www.w3.org/ns/prov#",
    # Freebase (WebQSP, ComplexWebQuestions)
    "ns": "http://rdf.freebase.com/ns/",
    "fb": "http://rdf.freebase.com/ns/",
    # DBpedia (LC-QuAD 1, QALD)
    "dbo": "http://dbpedia.org/ontology/",
    "dbr": "http://dbpedia.org/resource/",
    "res": "http://dbpedia.org/resource/",
    "dbp": "http://dbpedia.org/property/",
    "dbc": "http://dbpedia.org/resource/Category:",
    "yago": "http://dbpedia.org/class/yago/",
    # Wikidata (LC-QuAD 2, QALD-9+)
    "wd": "http://www.wikidata.org/entity/",
    "wdt": "http://www.wikidata.org/prop/direct/",
    "wds": "http://www.wikidata.org/entity/statement/",
    "wdv": "http://www.wikidata.org/value/",
    "p": "http://www.wikidata.org/prop/",
    "ps": "http://www.wikidata.org/prop/statement/",
    "psv": "http://www.wikidata.org/prop/statement/value/",
    "pq": "http://www.wikidata.org/prop/qualifier/",
    "pqv": "http://www.wikidata.org/prop/qualifier/value/",
    "wikibase": "http://wikiba.se/ontology#",
    "bd": "http://www.bigdata.com/rdf#",
}

FREEBASE_NS = "http://rdf.freebase.com/ns/"
WIKIDATA_ENTITY_NS = "http://www.wikidata.org/entity/"
DBPEDIA_RESOURCE_PATTERN = r"^https?://(?:[a-z-]+\.)?dbpedia\.org/resource/"
