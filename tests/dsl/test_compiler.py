"""The compiler's fast paths give what plain yaql gives, values and errors alike."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaql

from murano_engine.dsl import compiler, expressions, values
from murano_engine.dsl.contexts import DslContext
from murano_engine.engine.interpreter import build_interpreter

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
    # str() and concat() (fast for scalars and strings; the rest is yaql's)
    "str(1)", "str(-2.5)", "str(null)", "str(true)", "str(false)", "str('a')", "str($.s)",
    "str($.l)", "str($.d)", "str()", "str(1, 2)",
    "concat('a', 'b')", "concat('a')", "concat($.s, 'x', '')", "concat()", "concat('a', 1)",
    "concat('a', null)",
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


# -- collection fast paths (murano_engine.dsl.queries) against yaql in the same context --

BIG = list(range(1500))  # twice BIG is over the iterator limit (2,000)
COLLECTION_DATA = {**DATA, "big": BIG, "e": [], "objs": [{"n": 1}, {"n": 2}]}

COLLECTION_EXPRESSIONS = [
    # + on lists, dicts and sets
    "[1, 2] + [3]", "$.l + $.l", "[] + []", "$.e + [1]", "{a=>1} + {a=>2, b=>3}",
    "$.d + {x=>1}", "{} + {}", "set(1, 2) + set(2, 3)", "[1] + {a=>1}", "{a=>1} + [1]",
    "[1] + set(2)", "$.big + [1]", "($.big + $.big) + [1]", "[1] + ($.big + $.big)",
    "$.l + $.l.select($)", "[1] + 'a'", "null + [1]",
    # in
    "2 in set(1, 2)", "3 in ($.big + $.big)", "[1] in [[1], [2]]", "'k' in $.d",
    # len and count
    "len($.l)", "$.l.len()", "len($.d)", "$.d.len()", "len(set(1, 2))", "len($.e)",
    "len($.l.select($))", "$.l.where($ > 1).len()", "len('abc')", "len(null)", "len(5)",
    "len($.big + $.big)", "$.l.count()", "$.l.where($ > 1).count()", "($.big + $.big).count()",
    "$.d.count()", "$.l.len(1)",
    # select and where
    "$.l.select($ * 2)", "$.l.where($ > 1)", "$.e.select($)", "$.d.select($)",
    "'abc'.select($)", "$.n.select($)", "$.objs.select($.n)", "$.objs.where($.n > 1)",
    "$.l.select($ * 2).where($ > 2)", "($.big + $.big).select($)", "$.l.select()",
    "$.l.select($ / 0)", "$.l.where($ > 1).select([$, $])", "set(1, 2).select($ + 1)",
    # first and last
    "$.l.first()", "$.l.last()", "[].first()", "[].last()", "$.l.where($ > 5).first()",
    "$.l.where($ > 1).last()", "$.l.where($ > 5).last()", "$.l.first(7)", "[].first(7)",
    "[].last(7)", "set(1).last()", "set(1).first()", "($.big + $.big).first()",
    "($.big + $.big).last()", "$.d.first()", "'ab'.first()",
    # sum
    "$.l.sum()", "[1, 2.5].sum()", "['a', 'b'].sum()", "[[1], [2]].sum()", "[1, 'a'].sum()",
    "[].sum()", "$.l.select($ * 1.5).sum()", "[true, 1].sum()", "[1, true].sum()",
    "[{a=>1}, {b=>2}].sum()", "$.l.sum(10)", "$.objs.select($.n).sum()", "[0.1, 0.2, 0.3].sum()",
    "($.big + $.big).sum()", "[$.big, $.big].sum()", "[null, 1].sum()", "$.d.sum()",
    "[].sum(0)", "[].sum('x')", "['a', 'b'].sum('c')", "$.l.sum(initial => 1)", "$.l.sum(1, 2)",
    "[1, 'a'].sum(0)", "$.l.select($ * 2).sum(0.5)", "[[1]].sum([0])", "$.d.sum(0)",
    "$.l.sum(null)", "($.big + $.big).sum(0)",
    # dict get, keys and values (and what takes their views)
    "$.d.get('k')", "$.d.get('missing')", "$.d.get('missing', 3)", "$.d.get('k', 3)",
    "{a=>[1]}.get('a')", "{null=>1}.get(null)", "$.d.get()", "$.d.get('k', 1, 2)",
    "$.l.get(0)", "$.d.get('x', default => 2)", "$.n.get('k')",
    "$.d.keys()", "$.d.values()", "{a=>1, b=>2}.keys()", "{}.values()", "$.l.keys()",
    "$.d.keys(1)", "len($.d.keys())", "$.d.values().len()", "{a=>1, b=>2}.values().sum()",
    "{a=>1, b=>2}.keys().select($ + 'x')", "{a=>1, b=>2}.values().where($ > 1)",
    "{a=>1, b=>2}.values().first()", "{a=>1, b=>2}.values().last()",
    "{a=>1, b=>2}.keys().last()", "{a=>1, b=>2}.values().count()", "'k' in $.d.keys()",
    "{a=>'x', b=>'y'}.values().sum()", "{}.keys().first()", "{}.values().sum(0)",
    # len of text
    "'abc'.len()", "len('')",
    # orderBy, orderByDescending (thenBy extends them)
    "[3, 1, 2].orderBy($)", "$.l.orderByDescending($)", "$.l.orderBy(-$)",
    "['b', 'a', 'c'].orderByDescending($)", "[1, 2.5, 0].orderBy($)", "[2, 1.0, 1].orderBy($)",
    "[[1, 'c'], [2, 'b'], [3, 'c'], [0, 'd']].orderBy($[1])",
    "[[3, 'c'], [2, 'b'], [1, 'c']].orderBy($[1]).thenBy($[0])",
    "[[3, 'c'], [2, 'b'], [1, 'c']].orderByDescending($[1]).thenByDescending($[0])",
    "$.objs.orderByDescending($.n).first()", "$.objs.orderBy($.n).select($.n)",
    "[1, 'a'].orderBy($)", "[true, false].orderBy($)", "[null, 1].orderBy($)",
    "[[2], [1]].orderBy($)", "[].orderBy($)", "[].orderBy($).first()", "$.d.orderBy($)",
    "$.l.orderBy()", "$.l.orderBy($, 1)", "$.l.orderBy(selector => $)", "$.n.orderBy($)",
    "($.big + $.big).orderBy($)", "$.l.orderBy($).last()", "$.l.orderBy($).count()",
    "$.l.orderBy($).len()", "$.l.orderBy($).sum()", "$.l.orderBy($ / 0)",
    "{a=>2, b=>1}.values().orderBy($)", "$.l.select($ * 2).orderByDescending($)",
    # coalesce (lazy: arguments after the first non-null are not evaluated)
    "coalesce(null, 1, 2)", "coalesce(null, null)", "coalesce()", "coalesce($.n, $.a)",
    "coalesce(null, false, 1)", "coalesce(null, 1 / 0)", "coalesce(1, 1 / 0)",
    "coalesce($.n, $.l, $.d)", "coalesce($.d.get(missing), 'x')",
    # dict of keywords (the other forms stay yaql's)
    "dict(a => 1, b => [1, 2])", "dict()", "dict(a => $.l, b => $.d, c => $.n)",
    "dict('a' => 1)", "dict([['a', 1]])", "dict(a => 1 / 0)", "dict(a => 1, a => 2)",
    "dict(a => 1).a", "dict(a => 1) + {b => 2}",
    # toLower and toUpper
    "'AbC'.toLower()", "'AbC'.toUpper()", "$.s.toUpper()", "''.toLower()",
    "$.n.toLower()", "$.a.toUpper()", "'a'.toLower(1)", "$.l.toLower()",
    # replace: two strings, or a dict of replacements, and a count
    "'a-b-a'.replace('a', 'x')", "'a-b-a'.replace('a', 'x', 1)", "'a-b-a'.replace('a', '')",
    "'%A% %B% %A%'.replace({'%A%' => 1, '%B%' => null})", "'t f'.replace({t => true, f => false})",
    "'x y'.replace({x => [1, 2], y => {a => 1}})", "'abca'.replace({a => 1}, 1)",
    "'abc'.replace({})", "'abc'.replace(1, 2)", "$.n.replace('a', 'b')", "'a'.replace('a')",
    "'aaa'.replace('a', 'b', count => 2)", "'abc'.replace('a', 'b', 'c')",
    "'a.5'.replace({'.5' => 2.5})", "$.s.replace($.d)", "'abc'.replace({a => b, b => c})",
    # list() and set(): iterators among the arguments read out, nested ones too
    "list(1, 'a', null)", "list()", "list($.l)", "list($.l.select($), 4)", "list($.d)",
    "list($.l.select($.l.where($ > 1)))", "list($.d.keys())", "list('x' => 1)",
    "list(a => 1)", "list($.big + $.big)", "list(($.big + $.big).select($))",
    "list([1], {a=>1}, set(2))", "set(1, 1, 2)", "set()", "set($.l.select($ mod 2))",
    "set($.l, 1)", "set([1], 2)", "set({a=>1})", "set(($.big + $.big).select($))",
    "set('x' => 1)", "len(list(1, 2))", "list(1, 2) + [3]", "1 in set(1, 2)",
    # dict() of computed-key rules and of pairs
    "dict('a' => 1, 'b' => [1])", "dict($.s => 1)", "dict('a' => 1, 'a' => 2)",
    "dict([['a', 1], ['b', 2]])", "dict($.d.items())", "dict($.objs.select([$.n, $]))",
    "dict([['a']])", "dict([['a', 1, 2]])", "dict([1])", "dict(['ab'])", "dict('ab')",
    "dict($.d)", "dict($.n)", "dict([['b', 2]], 'a' => 1)", "dict([['a', 1]], [['b', 2]])",
    "dict([[[1], 2]])", "dict(($.big + $.big).select([$, $]))", "dict([]).len()",
    "dict([[$.l, 1]])", "dict([['a', 1]], b => 2)",
    # toList, items, append, dict.set and mergeWith
    "$.l.toList()", "$.l.select($ * 2).toList()", "$.d.toList()", "'ab'.toList()",
    "$.n.toList()", "($.big + $.big).toList()", "$.l.toList(1)", "set(1, 2).toList()",
    "$.d.items()", "{}.items()", "$.d.items().select($[0])", "$.l.items()", "$.d.items(1)",
    "$.l.append(4, 5)", "$.l.append()", "$.e.append([1])", "$.l.append('a' => 1)",
    "$.d.append(1)", "$.n.append(1)", "'ab'.append(1)", "$.l.select($).append(0)",
    "($.big + $.big).append(1)", "$.l.append(x => 1)", "$.l.append(1) = [1, 2, 3, 1]",
    "[1, 2, 1, 3, 2].distinct()", "$.e.distinct()", "$.objs.append($.objs[0]).distinct()",
    "[[1], [1], 2].distinct()", "$.l.select($ mod 2).distinct()", "$.d.distinct()",
    "'aba'.distinct()", "$.n.distinct()", "($.big + $.big).distinct()", "$.l.distinct($)",
    "set(1, 2).distinct()", "[1, 1.0, true].distinct()", "$.d.values().distinct()",
    # first with a default, contains, containsKey, selectMany, concat, skip, take, toDict
    "$.l.first(0)", "[].first(0)", "$.e.first(null)", "$.l.where($ > 5).first(-1)",
    "$.l.where($ > 1).first(-1)", "set().first(1)", "$.l.first(1 / 0)", "[].first(1, 2)",
    "$.l.first(default => 3)", "$.d.first(1)", "$.n.first(1)",
    "$.l.contains(2)", "$.l.contains(9)", "$.l.select($ * 2).contains(4)", "$.e.contains(null)",
    "set(1, 2).contains(1)", "$.d.contains('k')", "'abc'.contains('b')", "$.n.contains(1)",
    "[[1]].contains([1])", "($.big + $.big).contains(1)", "$.l.contains()", "$.l.contains(1, 2)",
    "$.d.keys().contains('k')", "$.l.contains({a => 1})",
    "$.d.containsKey('k')", "$.d.containsKey('x')", "{null => 1}.containsKey(null)",
    "$.l.containsKey(1)", "$.d.containsKey([1])", "$.d.containsKey()", "$.n.containsKey(1)",
    "$.objs.selectMany([$.n, $.n])", "$.l.selectMany($)", "$.objs.selectMany($)",
    "[[1, 2], [3]].selectMany($)", "['ab', 'c'].selectMany($)", "$.l.selectMany(set($))",
    "$.e.selectMany($)", "$.d.selectMany($)", "$.n.selectMany($)", "$.l.selectMany()",
    "($.big + $.big).selectMany($)", "$.l.selectMany($ / 0)", "$.l.selectMany($.d.keys())",
    "$.l.concat([4])", "$.l.concat($.l, set(5))", "$.e.concat()", "$.l.concat('ab')",
    "$.l.concat($.d)", "$.l.concat(null)", "'ab'.concat('c')", "$.l.select($).concat([0])",
    "($.big + $.big).concat([1])", "[1].concat($.big + $.big)", "$.d.values().concat([1])",
    "$.l.skip(1)", "$.l.take(2)", "$.l.skip(5)", "$.l.take(0)", "$.l.skip(-1)", "$.l.take(-1)",
    "$.l.skip(true)", "$.l.take(1.5)", "$.l.take(null)", "$.l.select($).skip(1).take(1)",
    "($.big + $.big).take(2)", "$.d.take(1)", "'abc'.take(2)", "$.l.skip()", "$.n.skip(1)",
    "$.l.take(count => 1)",
    "$.l.toDict($)", "$.l.toDict($, $ * 2)", "$.objs.toDict($.n)", "$.e.toDict($)",
    "$.l.toDict($ mod 2)", "$.l.toDict([$])", "$.l.toDict()", "$.d.toDict($)",
    "$.l.toDict($, $, $)", "($.big + $.big).toDict($)", "$.l.toDict($ / 0)",
    "{a => 1} + $.l.toDict($)", "$.l.toDict($) + {a => 1}", "$.l.toDict($) + $.l.toDict(-$)",
    # switch and abs
    "switch($.a > 1 => 'big', true => 'small')", "switch(false => 1)", "switch()",
    "switch($.n => 1, $.l => 2)", "switch(1 / 0 => 1)", "switch(true => 1 / 0, true => 2)",
    "switch(x => 1)", "switch(true => 1, x => 2)", "switch(1)", "switch(false => 1 / 0)",
    "abs(-2)", "abs(2.5)", "abs(-0.0)", "abs(true)", "abs('a')", "abs(null)", "abs(1, 2)",
    "abs(x => 1)",
    "$.d.set(x => 1)", "$.d.set('k' => 2, y => 3)", "$.d.set(k, 3)", "$.d.set({z => 1})",
    "$.d.set(1, 'a' => 2).keys()", "$.d.set(1, a => 2).len()", "$.d.set('a' => 1, b => 2)",
    "$.d.set(a => 1, b => 2)", "$.d.set(1, 2, 3)", "$.d.set([1])", "$.d.set()", "$.l.set(1, 2)",
    "$.d.set({a => 1}, 2)", "$.d.set(k => [1, 2])", "$.d.set($.l, 1)", "$.d.set(null, 1)",
    "{a => 1, b => [1, 2], c => {x => 1, y => [1]}}.mergeWith("
    "{b => [2, 3], c => {y => [1, 2], z => 2}, d => 4})",
    "$.d.mergeWith({})", "{}.mergeWith($.d)", "$.d.mergeWith($.l)", "$.l.mergeWith($.d)",
    "{a => 1}.mergeWith({a => {b => 1}})", "{a => [1]}.mergeWith({a => {b => 1}})",
    "{a => 1}.mergeWith({a => [1]})", "{a => [1, 1]}.mergeWith({a => [1, 2]})",
    "{a => 1}.mergeWith({a => 2}, maxLevels => 1)", "{a => [1]}.mergeWith({a => [2]}, $1)",
    "{a => {b => 1}}.mergeWith({a => {c => 2}}).a.c",
]


@pytest.fixture(scope="module")
def frame_context(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A DslContext in a real frame, as a method body evaluates in."""
    from murano_engine.dsl.executor import Executor, Frame
    from murano_engine.dsl.packages import PackageLoader
    from tests.dsl.dsl_helpers import class_text, write_package

    root = tmp_path_factory.mktemp("compiler")
    write_package(root, "test.compiler", {"Host": class_text("test.compiler", "Host", "")})
    loader = PackageLoader([root], build_interpreter())
    cls = loader.find_class("test.compiler.Host")
    executor = Executor(loader)
    return Frame(executor, None, cls.ref, cls, None).context


@pytest.fixture(scope="module")
def legacy_context(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A DslContext in a frame of a Format 1.0 class: yaql's legacy flavour."""
    from murano_engine.dsl.executor import Executor, Frame
    from murano_engine.dsl.packages import PackageLoader
    from tests.dsl.dsl_helpers import class_text, write_package

    root = tmp_path_factory.mktemp("legacy")
    write_package(root, "test.legacy", {"Host": class_text("test.legacy", "Host", "")},
                  fmt="1.0")
    loader = PackageLoader([root], build_interpreter())
    cls = loader.find_class("test.legacy.Host")
    return Frame(Executor(loader), None, cls.ref, cls, None).context


def frozen_outcome(evaluate: Any) -> tuple[str, Any]:
    return outcome(lambda: values.freeze(evaluate(), limit=10**6))


@pytest.mark.parametrize("text", COLLECTION_EXPRESSIONS)
def test_collection_fast_paths_agree_with_yaql(text: str, frame_context: Any) -> None:
    data = values.freeze(COLLECTION_DATA)
    node = expressions.parse(text).node.expression  # both without the Statement's unwrapping
    runtime = frame_context.frame.executor.runtime

    def by_yaql() -> Any:
        ctx = DslContext(frame_context)
        ctx["$"] = data
        return node(compiler.NO_VALUE, ctx, runtime.engine)

    def compiled() -> Any:
        ctx = DslContext(frame_context)
        ctx["$"] = data
        return compiler.compile_expression(node, runtime)(ctx)

    expected = frozen_outcome(by_yaql)
    actual = frozen_outcome(compiled)
    assert actual == expected
    if expected[0] == "value":
        assert type(actual[1]) is type(expected[1])


@pytest.mark.parametrize("text", [
    "list(1, 2)", "list($.l.select($))", "set(1, 2)", "$.l.toList()",
    "$.d.items()", "$.l.append(1)", "$.d.set(x => 1)", "$.d.set('x', 1)",
    "{a => [1]}.mergeWith({a => [2]})",
])
def test_builders_in_legacy_packages_stay_yaqls(text: str, legacy_context: Any) -> None:
    """Formats 1.0 and 1.1 evaluate with yaql's legacy flavour (``toList()`` gives Python
    lists): the fast paths leave those calls to it."""
    data = values.freeze(COLLECTION_DATA)
    node = expressions.parse(text).node.expression
    runtime = legacy_context.frame.executor.runtime
    assert legacy_context.frame.murano_class.package.legacy

    def evaluate(compiled: bool) -> Any:
        ctx = DslContext(legacy_context)
        ctx["$"] = data
        if compiled:
            return compiler.compile_expression(node, runtime)(ctx)
        return node(compiler.NO_VALUE, ctx, runtime.engine)

    expected, actual = evaluate(False), evaluate(True)
    if isinstance(expected, Iterator):
        expected, actual = list(expected), list(actual)
    assert actual == expected
    assert type(actual) is type(expected)


def test_collection_fast_paths_count_a_budget_step_per_lambda_call(frame_context: Any) -> None:
    budget = frame_context.frame.executor.budget
    runtime = frame_context.frame.executor.runtime
    ctx = DslContext(frame_context)
    ctx["$"] = values.freeze([1, 2, 3])
    node = expressions.parse("$.select($ + 1).where($ > 2).sum()").node
    before = budget.left
    assert compiler.compile_expression(node, runtime)(ctx) == 7
    assert before - budget.left == 6  # three selector and three predicate calls


@pytest.mark.parametrize("text", [
    "$.select($ + 1).where($ > 2).sum()", "$.orderBy($).first()",
    "$.orderByDescending($).thenBy(-$).last()", "{a => 1, b => 2}.values().select($).sum()",
    "coalesce(null, $.first(), 1 / 0)", "coalesce(null, null)",
    "dict(a => $.first(), b => $.last()).a",
    "switch($.first() > 3 => 1, $.last() > 3 => $.first())", "switch($.first() > 9 => 1)",
    "$.toDict($, $ * 2)", "$.selectMany([$, $]).len()",
])
def test_collection_fast_paths_count_the_budget_steps_yaql_does(
        text: str, frame_context: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from murano_engine.dsl import queries

    budget = frame_context.frame.executor.budget
    runtime = frame_context.frame.executor.runtime
    node = expressions.parse(text).node

    def steps() -> tuple[Any, int]:
        ctx = DslContext(frame_context)
        ctx["$"] = values.freeze([3, 1, 2, 5])
        before = budget.left
        result = values.freeze(compiler.compile_expression(node, runtime)(ctx))
        return result, before - budget.left

    fast = steps()
    monkeypatch.setattr(queries, "METHODS", {})
    monkeypatch.setattr(queries, "LAZY_FUNCTIONS", {})
    assert steps() == fast


def test_expressions_of_the_same_text_share_one_syntax_tree() -> None:
    first = expressions.parse("$.a * 2", None)
    again = expressions.Expression("$.a * 2", None, None)  # as read back from the cache
    assert again.node is first.node
    for expression, data, expected in ((first, {"a": 2}, 4), (again, {"a": 5}, 10)):
        ctx = DslContext(RUNTIME.root_context(False))
        ctx["$"] = values.freeze(data)
        assert compiler.compile_expression(expression.node, RUNTIME)(ctx) == expected


@pytest.mark.parametrize("text, expected", [
    ("coalesce(null, $.first(), 1 / 0)", 3), ("dict(a => $.last()).a", 5),
    ("'AbC'.toLower() + 'x'.toUpper()", "abcX"),
    ("'%A% %B%'.replace({'%A%' => $.first(), '%B%' => true}).replace('3', 'x')", "x true"),
    ("list($.first(), $.select($ * 2)).len()", 5), ("set($.last(), 5).len()", 1),
    ("dict('a' => 1, $.first() => 2).get(3)", 2), ("dict($.select([$, $])).get(5)", 5),
    ("{a => 1}.items().toList().len()", 1), ("$.append(7).toList().len()", 5),
    ("{a => 1}.set(b => 2).set('c', 3).set({d => 4}).len()", 4),
    ("{a => [1]}.mergeWith({a => [2, 1]}).a", (1, 2)),
    ("$.append(3).distinct().toList()", (3, 1, 2, 5)),
    ("switch($.first() > 9 => 1, $.last() > 3 => abs(-2))", 2),
    ("$.contains(2) and {a => 1}.containsKey(a) and $.first(0) = 3", True),
    ("$.selectMany([$]).concat([1]).skip(1).take(2).toList()", (1, 2)),
    ("$.toDict($) + {a => 1}", {3: 3, 1: 1, 2: 2, 5: 5, "a": 1}),
])
def test_common_builders_and_case_changes_skip_yaqls_overload_resolution(
        text: str, expected: Any, frame_context: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from yaql.language import runner

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("resolved by yaql")

    monkeypatch.setattr(runner, "call", refused)
    runtime = frame_context.frame.executor.runtime
    ctx = DslContext(frame_context)
    ctx["$"] = values.freeze([3, 1, 2, 5])
    assert compiler.compile_expression(expressions.parse(text).node, runtime)(ctx) == expected
