"""Building yaql's parser once per machine instead of once per process.

yaql builds its LALR tables at start-up, which costs about 0.1 s. The tables
depend only on the grammar, so they are pickled under the user's cache folder
and reused while the yaql version and the operator table stay the same. Any
problem with the cache falls back to building the tables.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaql
from yaql._ply import lex, yacc
from yaql.language import factory as yaql_factory

CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "murano-engine"


def create_engine(factory: yaql_factory.YaqlFactory, options: dict[str, Any]) -> Any:
    """What ``factory.create(options)`` returns, with the parse tables cached."""
    operators = factory._build_operator_table(factory._name_generator())
    lexer_rules = factory._create_lexer(operators)
    ply_lexer = lex.lex(object=lexer_rules, reflags=re.UNICODE | re.VERBOSE)
    grammar = factory._create_parser(lexer_rules, operators)
    key = hashlib.sha256(repr((yaql.__version__, sorted(
        (k, tuple(v) if isinstance(v, list) else v) for k, v in operators.operators.items()),
        operators.name_value_op)).encode()).hexdigest()[:16]
    cache = CACHE_DIR / f"yaql-tables-{key}.pickle"
    parser = _load(cache, grammar)
    if parser is None:
        parser = yacc.yacc(module=grammar, debug=False)
        _save(cache, parser)
    return yaql_factory.YaqlEngine(ply_lexer, parser, options, factory)


def _load(cache: Path, grammar: Any) -> Any:
    try:
        productions, action, goto = pickle.loads(cache.read_bytes())
        for production in productions:
            production.callable = getattr(grammar, production.func) if production.func else None
    except (OSError, pickle.PickleError, EOFError, AttributeError, ValueError, TypeError):
        return None
    tables = SimpleNamespace(lr_productions=productions, lr_action=action, lr_goto=goto)
    return yacc.LRParser(tables, grammar.p_error)


def _save(cache: Path, parser: Any) -> None:
    callables = [p.callable for p in parser.productions]
    try:
        for production in parser.productions:
            production.callable = None
        data = pickle.dumps((parser.productions, parser.action, parser.goto))
        cache.parent.mkdir(parents=True, exist_ok=True)
        temporary = cache.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_bytes(data)
        temporary.replace(cache)
    except (OSError, pickle.PickleError):
        pass
    finally:
        for production, func in zip(parser.productions, callables, strict=True):
            production.callable = func
