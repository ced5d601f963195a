"""SPARQL: normalise Virtuoso-isms, validate with rdflib, name entities, tokenize (Fig. 2)."""
from parsers.sparql.labels import GraphLabels, TableLabels
from parsers.sparql.tokenize import tokenize_sparql

__all__ = ["GraphLabels", "TableLabels", "tokenize_sparql"]
