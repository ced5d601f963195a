"""SQL -> model tokens, over sqlglot's tokenizer (the rules themselves live in ``parsers.token_rules``).

Each sqlglot token becomes model tokens by its type:

- keywords, function names and unquoted identifiers: ``split_identifier`` (lowercase, split on the
  separators, ``_`` and camelCase: ``playerName`` -> ``player name``, ``GROUP BY`` -> ``group by``);
- quoted identifiers: the same, without the quoting characters (``"School/Club Team"`` ->
  ``school / club team``, ``[a b]`` and ```a b``` -> ``a b``);
- string literals: ``literal_tokens`` (quote, natural-language words of the content, quote), so
  that a value can be copied into the question (``'Butler CC (KS)'`` -> ``' butler cc ( ks ) '``);
  a hex/bit literal written without quotes (``0x1F``) is one token, like a number;
- numbers: one token each, lowercased (``4.5``, ``1e5``);
- operators and punctuation: ``operator_tokens`` (``<=`` -> ``< =``, ``!=`` -> ``! =``);
- comments are dropped. SQL has no entities, so ``ParsedLF.entities`` is empty.
"""
from __future__ import annotations

from functools import lru_cache

from sqlglot.tokens import Token, TokenType

from parsers.errors import EmptyInputError
from parsers.guards import check_text
from parsers.result import ParsedLF
from parsers.sql.validate import lex_sql, parse_tokens, render_sql
from parsers.tokens import literal_tokens, operator_tokens, split_identifier

_STRING_TYPES = frozenset(
    getattr(TokenType, name)
    for name in (
        "STRING", "NATIONAL_STRING", "RAW_STRING", "HEREDOC_STRING", "UNICODE_STRING",
        "BIT_STRING", "HEX_STRING", "BYTE_STRING",
    )
    if hasattr(TokenType, name)
)
_NUMBER = TokenType.NUMBER


@lru_cache(maxsize=1 << 16)
def _word_tokens(text: str) -> tuple[str, ...]:
    """Tokens of a keyword, function name, identifier or operator (memoised: the vocabulary repeats)."""
    if any(ch.isalnum() for ch in text):
        return tuple(split_identifier(text))
    return tuple(operator_tokens(text))


def _string_tokens(token: Token, sql: str) -> list[str]:
    """A string literal: quote, content words, quote; an unquoted ``0x1F``-style literal: one token."""
    closing = sql[token.end] if 0 <= token.end < len(sql) else "'"
    if closing.isalnum():
        return [sql[token.start : token.end + 1].lower()]
    return literal_tokens(closing if closing in "'\"`$" else "'", token.text)


def sql_model_tokens(tokens: list[Token], sql: str) -> list[str]:
    """Model tokens for sqlglot ``tokens`` of ``sql`` (see the module docstring for the rules)."""
    out: list[str] = []
    extend = out.extend
    for token in tokens:
        kind = token.token_type
        if kind in _STRING_TYPES:
            extend(_string_tokens(token, sql))
        elif kind is _NUMBER:
            out.append(token.text.lower())
        else:
            extend(_word_tokens(token.text))
    return out


def tokenize_sql(sql: str, dialect: str = "sqlite", validate: bool = True) -> ParsedLF:
    """Tokenize one SQL query; with ``validate`` also parse it (one SELECT only) and re-render it.

    ``normalized`` is sqlglot's rendering of the statement in ``dialect``; with ``validate=False``
    nothing is parsed and it is the input stripped of surrounding whitespace. Raises a
    ``LogicalFormError`` subclass for any input that cannot be used.
    """
    text = check_text(sql)
    sqlglot_tokens = lex_sql(text, dialect)
    tokens = sql_model_tokens(sqlglot_tokens, text)
    if not tokens:
        raise EmptyInputError("the SQL holds no tokens (only comments or semicolons)", text)
    if validate:
        normalized = render_sql(parse_tokens(sqlglot_tokens, text, dialect), dialect)
    else:
        normalized = text.strip()
    return ParsedLF(lf_type="sql", logical_form=text, normalized=normalized, tokens=tokens)
