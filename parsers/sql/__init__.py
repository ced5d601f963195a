"""SQL logical forms: validation (sqlglot), tokenization, and WikiSQL dicts rendered as SQL."""
from parsers.sql.tokenize import sql_model_tokens, tokenize_sql
from parsers.sql.validate import parse_sql
from parsers.sql.wikisql import AGG_OPS, COND_OPS, render_wikisql, wikisql_table_name

__all__ = [
    "AGG_OPS",
    "COND_OPS",
    "parse_sql",
    "render_wikisql",
    "sql_model_tokens",
    "tokenize_sql",
    "wikisql_table_name",
]
