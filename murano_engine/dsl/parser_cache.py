"""yaql's parser without building its tables at start-up.

yaql builds its LALR tables when an engine is made, which costs about 0.1 s.
The tables depend only on the grammar: the yaql version and the operator
table. The tables for the yaql this package was made with ship beside this
module (``yaql_tables.json``, written by ``python -m
murano_engine.dsl.parser_cache``); with another yaql they are built once and
kept under the user's cache folder. Both are used only while the grammar they
were built for - the yaql version and the operator table, written out in full
in them - is the one in use, and any problem reading them falls back to
building the tables.
"""

from __future__ import annotations

import _pickle  # the C pickler (pickle.py, its Python fallback, costs start-up time)
import json
import os
import re
import sys
import zlib
from types import SimpleNamespace

import yaql
from yaql._ply import lex, yacc
from yaql.language import factory as yaql_factory

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

CACHE_DIR = os.path.join(os.environ.get("XDG_CACHE_HOME") or
                         os.path.join(os.path.expanduser("~"), ".cache"), "murano-engine")
PACKAGED = os.path.join(os.path.dirname(__file__), "yaql_tables.json")


class _Production:
    """What yaql's LR parser reads of a grammar rule."""

    __slots__ = ("name", "len", "callable")

    def __init__(self, name: str, length: int, func: Any) -> None:
        self.name = name
        self.len = length
        self.callable = func


def create_engine(factory: yaql_factory.YaqlFactory, options: dict[str, Any]) -> Any:
    """What ``factory.create(options)`` returns, with the parse tables shipped or cached."""
    ply_lexer, grammar, key = _grammar(factory)
    cache = os.path.join(CACHE_DIR, f"yaql-tables-{zlib.crc32(key.encode()):08x}.pickle")
    parser = _packaged(PACKAGED, key, grammar) or _load(cache, key, grammar)
    if parser is None:
        parser = yacc.yacc(module=grammar, debug=False)
        _save(cache, key, parser)
    return yaql_factory.YaqlEngine(ply_lexer, parser, options, factory)


def _grammar(factory: yaql_factory.YaqlFactory) -> tuple[Any, Any, str]:
    """The lexer, the grammar object and the grammar's key: the yaql version and the
    operator table, written out."""
    operators = factory._build_operator_table(factory._name_generator())
    lexer_rules = factory._create_lexer(operators)
    ply_lexer = lex.lex(object=lexer_rules, reflags=re.UNICODE | re.VERBOSE)
    grammar = factory._create_parser(lexer_rules, operators)
    key = repr((yaql.__version__, sorted(
        (k, tuple(v) if isinstance(v, list) else v) for k, v in operators.operators.items()),
        operators.name_value_op))
    return ply_lexer, grammar, key


def _read(path: str | os.PathLike[str]) -> bytes:
    with open(path, "rb") as stream:
        return stream.read()


def _packaged(path: str | os.PathLike[str], key: str, grammar: Any) -> Any:
    try:
        data = json.loads(_read(path))
        if data.get("key") != key:
            return None
        productions = [_Production(name, length, getattr(grammar, func) if func else None)
                       for name, length, func in data["productions"]]
        action = {int(state): row for state, row in data["action"].items()}
        goto = {int(state): row for state, row in data["goto"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    tables = SimpleNamespace(lr_productions=productions, lr_action=action, lr_goto=goto)
    return yacc.LRParser(tables, grammar.p_error)


def tables_json(factory: yaql_factory.YaqlFactory) -> str:
    """The packaged-tables file for ``factory``'s grammar, built now."""
    _, grammar, key = _grammar(factory)
    parser = yacc.yacc(module=grammar, debug=False)
    productions = [[p.name, p.len, p.callable.__name__ if p.callable else None]
                   for p in parser.productions]
    return json.dumps({"key": key, "productions": productions,
                       "action": parser.action, "goto": parser.goto},
                      sort_keys=True, separators=(",", ":")) + "\n"


def _load(cache: str | os.PathLike[str], key: str, grammar: Any) -> Any:
    try:
        built_for, productions, action, goto = _pickle.loads(_read(cache))
        if built_for != key:
            return None
        for production in productions:
            production.callable = getattr(grammar, production.func) if production.func else None
    except (OSError, _pickle.PickleError, EOFError, AttributeError, ValueError, TypeError):
        return None
    tables = SimpleNamespace(lr_productions=productions, lr_action=action, lr_goto=goto)
    return yacc.LRParser(tables, grammar.p_error)


def _save(cache: str | os.PathLike[str], key: str, parser: Any) -> None:
    callables = [p.callable for p in parser.productions]
    try:
        for production in parser.productions:
            production.callable = None
        data = _pickle.dumps((key, parser.productions, parser.action, parser.goto))
        cache = os.fspath(cache)
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        temporary = f"{cache}.{os.getpid()}.tmp"
        with open(temporary, "wb") as stream:
            stream.write(data)
        os.replace(temporary, cache)
    except (OSError, _pickle.PickleError):
        pass
    finally:
        for production, func in zip(parser.productions, callables, strict=True):
            production.callable = func


def main() -> int:
    """Write the packaged tables for the installed yaql (run after upgrading yaql)."""
    from murano_engine.dsl.grammar import murano_factory
    with open(PACKAGED, "w") as stream:
        stream.write(tables_json(murano_factory()))
    print(f"wrote {PACKAGED}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
