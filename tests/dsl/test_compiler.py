"""The compiler's fast paths give what plain yaql gives, values and errors alike."""

from __future__ import annotations

from typing import Any

import pytest
import yaql

from murano_engine.dsl import compiler, expressions, values
from murano_engine.dsl.contexts import DslContext
from murano_engine.interpreter import build_interpreter

RUNTIME = build_interpreter().runtime

DATA = {"a": 5, "l": [1, 2, 3], "d": {"k": "v"}, "s": "abc", "f": 1.5, "n": None}

EXPRESSIONS = [
    # arithmetic: int division floors, float division does not
    "7 / 2", "-7 / 2", "7 / -2", "7 / 2.0", "7.0 / 2", "10 / 4", "1 / 0", "1.0 / 0",
    "1 + 2.5", "2 - 5", "1.5 * 2", "3 mod 2", "-7 mod 3", "7.5 mod 2", "-(3)", "-$.f", "+$.a",
    "2 * 3 + 4", "$.a * $.f", "$.a / 2",
    # strings and lists
    "'a' + 'b'", "$.s + 'd'", "'ab' * 3", "3 * 'ab'", "'a' + 1", "1 + 'a'",
    "[1] + [2]", "$.l + [4]", "[1] + 2", "{a=>1} + {b=>2}", "null + 1", "true + 1", "1 - true",
    "-'a'",
    # comparison
    "1 < 2", "2 > 1.5", "'b' > 'a'", "'a' <= 'a'", "1 < 'a'", "1 = 1.0", "null = null",
    "[1, 2] = [1, 2]", "'1' = 1", "1 != 2", "null < 1",
    # in
    "'a' in ['a', 'b']", "3 in $.l", "9 in $.l", "'a' in 'abc'", "1 in {1=>2}", "'k' in $.d",
    "1 in 5", "null in [null]",
    # indexing
    "$.l[0]", "$.l[-1]", "$.l[-3]", "$.l[3]", "$.l[-4]", "$.d['k']", "$.d['missing']", "$.d.k",
    "$.s[0]", "$.s[-1]", "[[1, 2]][0][1]", "$.l['x']", "$[a]", "$.a",
    "{a=>1}['a']", "{a=>1}['b']",
    # ($.d.missing is null, as with Murano's yaql 1.x; yaql 3 raises KeyError: not compared)
    # logic
    "true and 0", "0 or 'x'", "not $.n", "$.n = null and 1",
]


def engine_eval(text: str, data: Any) -> Any:
    ctx = DslContext(RUNTIME.root_context(False))
    ctx["$"] = values.freeze(data)
    return compiler.compile_expression(expressions.parse(text).node, RUNTIME)(ctx)


def outcome(evaluate: Any) -> tuple[str, Any]:
    try:
        return "value", values.thaw(evaluate())
    except Exception as exc:  # noqa: BLE001 - the exception kind is the outcome
        return "error", type(exc).__name__


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_fast_paths_agree_with_yaql(text: str) -> None:
    expected = outcome(lambda: yaql.eval(text, data=DATA))
    actual = outcome(lambda: engine_eval(text, DATA))
    assert actual == expected
    if expected[0] == "value":
        assert type(actual[1]) is type(expected[1])


def test_yaql_lists_come_back_frozen() -> None:
    assert engine_eval("[1, [2]]", None) == (1, (2,))
    assert type(engine_eval("$.l + [4]", DATA)) is tuple
    assert isinstance(engine_eval("{a => [1]}", None)["a"], tuple)
