"""yaql's parse tables: shipped with the package, cached per user, rebuilt otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from yaql._ply import yacc

from murano_engine.dsl import parser_cache
from murano_engine.dsl.grammar import murano_factory

REPO = Path(__file__).resolve().parents[2]
SAMPLES = ["$.a + 1", "$x.select($.name).where($ != null)", "ns:Name", ":Name", "$ is ns:T",
           "{a => [1, 2], b => $.c[0]}", "not $a or $b and $c", "$.f(1, x => 2)", "-$a mod 3",
           "'s' =~ 'p'", "$a?.b", "$a -> $b", "$[1]", "let(x => 1) -> $x"]


def test_the_packaged_tables_are_those_of_the_installed_yaql() -> None:
    built = json.loads(parser_cache.tables_json(murano_factory()))
    shipped = json.loads(Path(parser_cache.PACKAGED).read_text())
    assert shipped == built, ("murano_engine/dsl/yaql_tables.json is out of date: "
                              "run python -m murano_engine.dsl.parser_cache")


def test_the_packaged_tables_parse_as_freshly_built_ones() -> None:
    factory = murano_factory()
    lexer, grammar, key = parser_cache._grammar(factory)
    packaged = parser_cache._packaged(parser_cache.PACKAGED, key, grammar)
    assert packaged is not None
    from yaql.language import factory as yaql_factory
    fresh = yaql_factory.YaqlEngine(lexer, yacc.yacc(module=grammar, debug=False), {}, factory)
    shipped = yaql_factory.YaqlEngine(lexer, packaged, {}, factory)
    for text in SAMPLES:
        assert _tree(shipped(text)) == _tree(fresh(text)), text


def _tree(node: object) -> object:
    """A syntax tree as nested tuples: each node's class and attributes."""
    if isinstance(node, (list, tuple)):
        return tuple(_tree(n) for n in node)
    if not hasattr(node, "__dict__") and not hasattr(node, "__slots__"):
        return node
    fields = getattr(node, "__dict__", None) or {
        name: getattr(node, name, None) for name in getattr(node, "__slots__", ())}
    return (type(node).__name__, tuple(sorted(
        (k, _tree(v)) for k, v in fields.items() if k != "engine")))


def test_tables_of_another_grammar_are_not_used(tmp_path: Path) -> None:
    _, grammar, key = parser_cache._grammar(murano_factory())
    other = tmp_path / "tables.json"
    data = json.loads(Path(parser_cache.PACKAGED).read_text())
    data["key"] = data["key"].replace("'", '"')
    other.write_text(json.dumps(data))
    assert parser_cache._packaged(other, key, grammar) is None
    other.write_text("{not json")
    assert parser_cache._packaged(other, key, grammar) is None


def test_the_user_cache_serves_another_yaql_and_only_its_own_grammar(tmp_path: Path) -> None:
    _, grammar, key = parser_cache._grammar(murano_factory())
    cache = tmp_path / "tables.pickle"
    parser_cache._save(cache, key, yacc.yacc(module=grammar, debug=False))
    loaded = parser_cache._load(cache, key, grammar)
    assert loaded is not None and loaded.action == json_action()
    assert parser_cache._load(cache, key + " ", grammar) is None


def json_action() -> dict:
    data = json.loads(Path(parser_cache.PACKAGED).read_text())
    return {int(state): row for state, row in data["action"].items()}


@pytest.mark.parametrize("cache_state", ["empty", "corrupt"])
def test_a_cold_user_cache_is_neither_needed_nor_written(tmp_path: Path, cache_state: str) -> None:
    cache = tmp_path / "cache"
    if cache_state == "corrupt":
        (cache / "murano-engine").mkdir(parents=True)
        (cache / "murano-engine" / "yaql-tables-x.pickle").write_bytes(b"junk")
    code = ("from murano_engine.dsl.expressions import engine, parse;"
            "from yaql._ply import yacc;"
            "yacc.yacc = None;"  # building the tables would fail
            "print(parse('$.a + 1').node.expression.name)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(REPO),
                               "PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "#operator_+"
    written = sorted(p.name for p in (cache / "murano-engine").glob("*")) \
        if (cache / "murano-engine").exists() else []
    assert written == ([] if cache_state == "empty" else ["yaql-tables-x.pickle"])
