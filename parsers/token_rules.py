"""The tokenization rules, as data, shared by the SPARQL, SQL and structured-MR tokenizers.

Seed "Question Generation using a Scratchpad Encoder", section 4 / Figure 2: "we split on special
characters (? ! = : . _ ( ) { } '), ':' not followed by '/', and camelCasing. Entity IDs are
replaced with the 'ent:' token followed by the entity's full name. We then lowercase all strings."

Choices where the paper is silent (each is a row below, change it here and nowhere else):
- Separators are emitted as tokens, except ':' (the prefix colon, dropped as in Figure 2) and
  whitespace. Figure 2 also shows ',' as its own token, so the list is the paper's plus the other
  punctuation of SPARQL/SQL (',', '/', '<', '>', '"', '*', ';', '[', ']', '|', '&', '+', '^', '@',
  '$', '%', '#'). '-' is not a separator: dates (2015-08-09) and negative numbers stay whole.
- A multi-character operator is split into its characters ('!=' -> '! =', as in Figure 2).
- Text that is natural language (entity names, string literals, questions) is tokenized by one
  word/punctuation rule, so that a name in the logical form and in the question give the same
  tokens and can be copied.
"""
from __future__ import annotations

import re

ENTITY_TOKEN = "ent:"

# Characters that split identifiers and are kept as tokens.
EMITTED_SEPARATORS = "?!=._(){}',/<>\"*;[]|&+^@$%#"
# Characters that split identifiers and are dropped.
DROPPED_SEPARATORS = ":"

# ':' followed by '/' (a scheme such as http://) does not split.
SEPARATOR_PATTERN = re.compile(
    r"(\s+|:(?!/)|[" + re.escape(EMITTED_SEPARATORS) + r"])"
)

# camelCase boundaries: lower/digit -> Upper, and the end of an acronym (XMLFile -> XML File).
CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

# Natural-language text: words (inner hyphens, apostrophes, periods and commas of numbers kept,
# e.g. spider-man, o'neil, 3.5, 1,000) and single punctuation characters.
NL_TOKEN_PATTERN = re.compile(
    r"\d+(?:[.,]\d+)+(?:[-'’][^\W_]+)*"  # 3.5, 1,000, 2.5-inch
    r"|[^\W_]+(?:[-.][^\W_]+|['’](?!s\b)[^\W_]+)*"  # words: spider-man, o'neil, u.s
    r"|['’]s\b"  # possessive split off, so "bieber's" shares "bieber" with the name
    r"|[^\w\s]|_"  # any other character alone
)

# Token written for an entity that has no name from any source (numbered per logical form).
UNNAMED_ENTITY = "<e{index}>"
