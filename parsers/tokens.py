"""Token-level helpers that apply the rules of ``parsers.token_rules`` (shared by every LF type)."""
from __future__ import annotations

from functools import lru_cache

from parsers.token_rules import (
    CAMEL_BOUNDARY,
    ENTITY_TOKEN,
    NL_TOKEN_PATTERN,
    SEPARATOR_PATTERN,
)


def split_identifier(text: str) -> list[str]:
    """Split an identifier or keyword on the separators and camelCase, lowercased.

    ``travel_destination.howToGetHere`` -> ``travel _ destination . how to get here``.
    """
    return list(_split_identifier(text))


@lru_cache(maxsize=1 << 16)  # keywords and predicates repeat across a corpus: split each once
def _split_identifier(text: str) -> tuple[str, ...]:
    tokens: list[str] = []
    for piece in SEPARATOR_PATTERN.split(text):
        if not piece or piece.isspace() or piece == ":":
            continue
        if len(piece) == 1 and not piece.isalnum():
            tokens.append(piece)
            continue
        tokens.extend(CAMEL_BOUNDARY.sub(" ", piece).lower().split())
    return tuple(tokens)


def nl_tokens(text: str) -> list[str]:
    """Tokenize natural-language text (questions, names, literals): lowercased words and punctuation."""
    return NL_TOKEN_PATTERN.findall(text.lower())


def entity_tokens(name: str) -> list[str]:
    """``ent:`` followed by the entity name's words (Figure 2: ``ent: air transportation``)."""
    return [ENTITY_TOKEN, *nl_tokens(name)]


def operator_tokens(operator: str) -> list[str]:
    """A multi-character operator becomes one token per character (``!=`` -> ``! =``)."""
    return [ch for ch in operator if not ch.isspace()]


def literal_tokens(quote: str, content: str) -> list[str]:
    """A quoted literal: the quote, the content's words, the quote (``'en'`` -> ``' en '``)."""
    return [quote, *nl_tokens(content), quote]
