"""Validate SQL with sqlglot: one statement, and it must be a query (SELECT, set operation, CTE).

Parsing stays inside sqlglot; this module only keeps one tokenizer/parser/generator per dialect and
thread (building them per call is most of the cost of a short query), turns sqlglot's exceptions
into the typed errors of ``parsers.errors`` with a character offset, and refuses every statement
that is not a read-only query (DDL, DML, PRAGMA, ATTACH, transactions, several statements).
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, ParseError, TokenError
from sqlglot.generator import Generator
from sqlglot.parser import Parser
from sqlglot.tokens import Token, Tokenizer

from parsers.errors import EmptyInputError, SqlSyntaxError, UnsupportedQueryError
from parsers.guards import check_text

# Statements (anywhere in the tree) that make a logical form something other than a read-only query.
_STATEMENT_NAMES = (
    "Create", "Drop", "Alter", "Insert", "Update", "Delete", "Merge", "Copy", "Command", "Pragma",
    "Attach", "Detach", "Transaction", "Commit", "Rollback", "Set", "Use", "Analyze", "Refresh",
    "Cache", "Uncache", "Describe", "Kill", "Grant", "Revoke", "TruncateTable", "Summarize", "Into",
)
_FORBIDDEN: tuple[type, ...] = tuple(
    cls for cls in (getattr(exp, name, None) for name in _STATEMENT_NAMES) if isinstance(cls, type)
)


@dataclass
class SqlTools:
    """The sqlglot objects for one dialect, reused across calls (not thread-safe, hence per thread)."""

    dialect: Dialect
    tokenizer: Tokenizer
    parser: Parser
    generator: Generator


_LOCAL = threading.local()

# sqlglot's messages embed token and class reprs; these shorten them to the text they stand for.
_TOKEN_REPR = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: \d+, col: \d+, start: \d+, end: \d+, comments: \[.*?\]>")
_CLASS_REPR = re.compile(r"<class 'sqlglot\.[\w.]*?(\w+)'>")


def sql_tools(dialect: str) -> SqlTools:
    """This thread's cached tokenizer, parser and generator for ``dialect`` (ValueError if unknown)."""
    cache: dict[str, SqlTools] | None = getattr(_LOCAL, "tools", None)
    if cache is None:
        cache = _LOCAL.tools = {}
    tools = cache.get(dialect)
    if tools is None:
        d = Dialect.get_or_raise(dialect)
        tools = SqlTools(
            dialect=d,
            tokenizer=d.tokenizer(),
            parser=d.parser(error_level=ErrorLevel.RAISE),
            generator=d.generator(),
        )
        cache[dialect] = tools
    return tools


def lex_sql(sql: str, dialect: str = "sqlite") -> list[Token]:
    """sqlglot's tokens for ``sql``; an untokenizable input raises ``SqlSyntaxError`` with its offset."""
    tools = sql_tools(dialect)
    try:
        return tools.tokenizer.tokenize(sql)
    except TokenError as err:
        cause = err.__cause__
        detail = str(cause) if isinstance(cause, TokenError) else "unterminated quote or comment"
        position = getattr(getattr(tools.tokenizer, "_core", None), "_start", None)
        if not isinstance(position, int) or not 0 <= position < len(sql):
            position = err.start
        raise SqlSyntaxError(f"sqlglot cannot tokenize the statement: {detail}", sql, position) from None


def parse_sql(sql: str, dialect: str = "sqlite") -> exp.Expr:
    """Parse ``sql`` into one sqlglot query expression, or raise a typed ``LogicalFormError``."""
    sql = check_text(sql)
    return parse_tokens(lex_sql(sql, dialect), sql, dialect)


def parse_tokens(tokens: list[Token], sql: str, dialect: str = "sqlite") -> exp.Expr:
    """Parse tokens from ``lex_sql(sql, dialect)`` and check the result is exactly one query."""
    tools = sql_tools(dialect)
    try:
        statements = [s for s in tools.parser.parse(tokens, sql) if s is not None]
    except ParseError as err:
        raise _syntax_error(err, sql) from None
    except TokenError as err:  # the parser re-tokenizes some fragments (e.g. JSON paths)
        raise SqlSyntaxError(f"sqlglot cannot tokenize part of the statement: {err}", sql) from None
    except RecursionError:
        raise UnsupportedQueryError("the statement is nested too deeply to parse", sql) from None
    if not statements:
        raise EmptyInputError("the SQL holds no statement (only comments or semicolons)", sql)
    if len(statements) > 1:
        kinds = "; ".join(statement_name(s) for s in statements)
        raise UnsupportedQueryError(f"expected one statement, got {len(statements)} statements ({kinds})", sql)
    return check_query(statements[0], sql)


def check_query(root: exp.Expr, sql: str = "") -> exp.Expr:
    """Return ``root`` if it is a read-only query, else raise ``UnsupportedQueryError`` naming it."""
    if not isinstance(root, exp.Query):
        raise UnsupportedQueryError(f"only SELECT queries are supported, got {statement_name(root)}", sql)
    for node in root.walk():
        if isinstance(node, _FORBIDDEN):
            raise UnsupportedQueryError(f"the query contains a {statement_name(node)} statement", sql)
    if isinstance(root, exp.Select) and not root.expressions:
        raise SqlSyntaxError("SELECT without any result column", sql)
    return root


def render_sql(expression: exp.Expr, dialect: str = "sqlite") -> str:
    """``expression`` written back as SQL by sqlglot in ``dialect`` (the normalized form)."""
    try:
        return sql_tools(dialect).generator.generate(expression)
    except RecursionError:
        raise UnsupportedQueryError("the statement is nested too deeply to render", expression.sql()[:200]) from None


def statement_name(node: exp.Expr) -> str:
    """A readable name for a statement node: ``CREATE TABLE``, ``PRAGMA``, ``ALTER`` (from a Command)."""
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    if isinstance(node, exp.Into):
        return "SELECT ... INTO"
    name = type(node).__name__.upper()
    kind = node.args.get("kind")
    if isinstance(kind, str) and kind:
        return f"{name} {kind.upper()}"
    return name


def _syntax_error(err: ParseError, sql: str) -> SqlSyntaxError:
    """A one-line ``SqlSyntaxError`` at the offset where sqlglot's first error starts."""
    first = err.errors[0] if err.errors else {}
    description = first.get("description") or str(err).split("\n", 1)[0]
    description = _TOKEN_REPR.sub(_token_text, _CLASS_REPR.sub(r"\1", description))
    position = _offset(sql, first.get("line"), first.get("col"), first.get("highlight") or "")
    return SqlSyntaxError(f"sqlglot: {description}", sql, position)


def _token_text(match: re.Match[str]) -> str:
    """``<Token ... text: x ...>`` -> ``'x'`` (``the end of the input`` for sqlglot's sentinel)."""
    return "the end of the input" if match.group(1) == "SENTINEL" else repr(match.group(2))


def _offset(sql: str, line: object, col: object, highlight: str) -> int | None:
    """Offset of the token sqlglot reports at (line, col); its ``col`` is the token's last character."""
    if not isinstance(line, int) or not isinstance(col, int) or line < 1:
        return None
    start_of_line = 0
    for _ in range(line - 1):
        newline = sql.find("\n", start_of_line)
        if newline < 0:
            return None
        start_of_line = newline + 1
    end = start_of_line + max(col, 1) - 1
    position = end - max(len(highlight), 1) + 1
    return min(max(position, 0), max(len(sql) - 1, 0))
