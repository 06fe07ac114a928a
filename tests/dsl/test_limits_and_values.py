"""Runaway code ends in MuranoPL errors; values are frozen; collections are capped."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from dsl_helpers import class_text, run_method, write_package
from yaql.language import exceptions as yaql_exceptions
from yaql.language.utils import FrozenDict

from murano_engine.dsl import errors, executor, instructions, values
from murano_engine.dsl.errors import MuranoPlException

CODE = class_text("t.lim", "Code", """
    Methods:
      forever:
        Body:
          - $i: 0
          - While: true or $i > 0
            Do:
              - $i: $i + 1
      repeatMany:
        Body:
          - Repeat: 51
            Do:
              - $x: 1
      repeatFew:
        Body:
          - $n: 0
          - Repeat: 50
            Do:
              - $n: $n + 1
          - Return: $n
      countTo:
        Arguments:
          - n:
              Contract: $.int()
        Body:
          - $i: 0
          - While: $i < $n
            Do:
              - $i: $i + 1
          - $r: 0
          - Repeat: $n
            Do:
              - $r: $r + 1
          - Return: [$i, $r]
      recurse:
        Arguments:
          - n:
              Contract: $.int()
        Body:
          - If: $n > 0
            Then:
              - Return: $.recurse($n - 1) + 1
          - Return: 0
      catchDepth:
        Body:
          - Try:
              - $.recurse(100000)
            Catch:
              - With: 'murano.dsl.exceptions.CallDepthExceededError'
                As: e
                Do:
                  - Return: $e.message
      aliasing:
        Body:
          - $a: [1, [2, 3]]
          - $b: $a
          - $b[0]: 9
          - $b[1][0]: 8
          - $d: {k: [1]}
          - $e: $d
          - $e.k: 5
          - Return: [$a, $b, $d, $e]
      fromYaql:
        Body:
          - $l: range(3).select($ * 2)
          - Return: $l
      fromYaqlDict:
        Body:
          - Return: dict(a => [1, 2])
      bigRange:
        Body:
          - Return: range(2001).toList()
      bigFor:
        Body:
          - $n: 0
          - For: i
            In: range(20000)
            Do:
              - $n: $n + 1
          - Return: $n
      limitRange:
        Body:
          - Return: len(range(2000).toList())
""")


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("limits")
    write_package(root, "t.lim", {"Code": CODE})
    return [root]


def test_runaway_while_hits_the_loop_limit(pkgs: list[Path],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions, "LOOP_LIMIT", 50)
    with pytest.raises(errors.LoopLimitExceededError) as caught:
        run_method(pkgs, "t.lim.Code.forever")
    assert "50" in caught.value.message
    (frame,) = caught.value.murano_stack
    assert (frame.class_name, frame.method) == ("t.lim.Code", "forever")
    # The While (line 8) or the statement of its body that ran last (line 10).
    assert frame.position is not None and 8 <= frame.position.line <= 10


def test_repeat_over_the_loop_limit(pkgs: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions, "LOOP_LIMIT", 50)
    with pytest.raises(errors.LoopLimitExceededError):
        run_method(pkgs, "t.lim.Code.repeatMany")
    assert run_method(pkgs, "t.lim.Code.repeatFew") == 50


def test_the_default_loop_limit_is_generous(pkgs: list[Path]) -> None:
    """With the default limit, a While and a Repeat of 100 000 iterations run to the end."""
    assert list(run_method(pkgs, "t.lim.Code.countTo", n=100_000)) == [100_000, 100_000]


def test_runaway_recursion_is_call_depth_exceeded(pkgs: list[Path]) -> None:
    with pytest.raises(errors.CallDepthExceededError) as caught:
        run_method(pkgs, "t.lim.Code.recurse", n=10**6)
    assert not isinstance(caught.value, RecursionError)
    assert len(caught.value.murano_stack) == executor.MAX_CALL_DEPTH


@pytest.mark.parametrize("depth", [500, 1000, executor.MAX_CALL_DEPTH - 1])
def test_legitimate_depth_works(pkgs: list[Path], depth: int) -> None:
    assert run_method(pkgs, "t.lim.Code.recurse", n=depth) == depth


def test_a_thread_started_with_the_interpreters_stack_runs_the_deepest_recursion(
        pkgs: list[Path]) -> None:
    """murano-api and workers run tasks in threads of their own: those get the
    interpreter's stack, and only those."""
    import threading

    from murano_engine.dsl import concurrency
    depth = executor.MAX_CALL_DEPTH - 1
    results: list[object] = []
    thread = threading.Thread(target=lambda: results.append(
        run_method(pkgs, "t.lim.Code.recurse", n=depth)))
    with concurrency.interpreter_stacks():
        assert threading.stack_size() == concurrency.INTERPRETER_STACK
        thread.start()
    assert threading.stack_size() == 0  # the platform's default again
    thread.join()
    assert results == [depth]


def test_murano_code_can_catch_call_depth_exceeded(pkgs: list[Path]) -> None:
    assert "call depth exceeded" in run_method(pkgs, "t.lim.Code.catchDepth")


def test_values_have_copy_semantics(pkgs: list[Path]) -> None:
    a, b, d, e = run_method(pkgs, "t.lim.Code.aliasing")
    assert a == (1, (2, 3))
    assert b == (9, (8, 3))
    assert d == {"k": (1,)} and isinstance(d, FrozenDict)
    assert e == {"k": 5}


def test_a_list_from_yaql_becomes_a_tuple(pkgs: list[Path]) -> None:
    result = run_method(pkgs, "t.lim.Code.fromYaql")
    assert result == (0, 2, 4) and type(result) is tuple
    frozen = run_method(pkgs, "t.lim.Code.fromYaqlDict")
    assert isinstance(frozen, FrozenDict) and frozen["a"] == (1, 2)
    with pytest.raises(TypeError):
        frozen["b"] = 1  # type: ignore[index]


def test_freeze_is_deep_and_thaw_undoes_it() -> None:
    source = {"a": [1, {"b": [2]}], "s": {3}}
    frozen = values.freeze(source)
    assert frozen == {"a": (1, {"b": (2,)}), "s": frozenset({3})}
    assert type(frozen["a"]) is tuple and isinstance(frozen["a"][1], FrozenDict)
    source["a"].append(4)
    assert frozen["a"] == (1, {"b": (2,)})
    assert values.thaw(frozen) == {"a": [1, {"b": [2]}], "s": [3]}
    assert values.freeze(x * 2 for x in range(3)) == (0, 2, 4)


def test_the_iterator_limit_in_murano_code(pkgs: list[Path]) -> None:
    assert run_method(pkgs, "t.lim.Code.limitRange") == values.ITERATOR_LIMIT
    with pytest.raises((yaql_exceptions.CollectionTooLargeException, MuranoPlException)) as c:
        run_method(pkgs, "t.lim.Code.bigRange")
    assert "CollectionTooLargeException" in errors.python_name(c.value)
    with pytest.raises((yaql_exceptions.CollectionTooLargeException, MuranoPlException)) as c:
        run_method(pkgs, "t.lim.Code.bigFor")
    assert "CollectionTooLargeException" in errors.python_name(c.value)


@pytest.mark.parametrize("make", [
    lambda n: list(range(n)), lambda n: tuple(range(n)), lambda n: set(range(n)),
    lambda n: {i: i for i in range(n)}, lambda n: (i for i in range(n)),
    lambda n: iter(range(n)), lambda n: [[i] for i in range(n)],
])
def test_freeze_caps_collections_and_generators(make) -> None:  # noqa: ANN001
    limit = values.ITERATOR_LIMIT
    assert len(values.freeze(make(limit))) == limit
    with pytest.raises(yaql_exceptions.CollectionTooLargeException):
        values.freeze(make(limit + 1))


def test_freeze_caps_nested_collections() -> None:
    with pytest.raises(yaql_exceptions.CollectionTooLargeException):
        values.freeze({"deep": [list(range(values.ITERATOR_LIMIT + 1))]})


def test_an_endless_generator_is_stopped_at_the_limit() -> None:
    def endless():  # noqa: ANN202
        n = 0
        while True:
            yield n
            n += 1

    with pytest.raises(yaql_exceptions.CollectionTooLargeException):
        values.freeze(endless())


def test_a_long_list_grown_item_by_item_still_freezes_what_it_gets() -> None:
    grown: tuple = tuple(range(100))
    assert values.freeze(grown) is grown  # flat: kept as it is (and remembered)
    grown = values.concat(grown, (1, "a"))
    assert values.freeze(grown) is grown
    grown = values.concat(grown, ([1, 2],))  # a mutable list added: not flat any more
    frozen = values.freeze(grown)
    assert frozen is not grown and frozen[-1] == (1, 2) and type(frozen[-1]) is tuple
    long_with_dict = tuple(range(100)) + ({"a": [1]},)
    assert values.freeze(long_with_dict)[-1] == FrozenDict({"a": (1,)})


def test_a_list_of_records_grown_item_by_item_still_freezes_what_it_gets() -> None:
    records = tuple(FrozenDict({"name": f"e{i}", "n": i}) for i in range(10))
    assert values.freeze(records) is records  # nothing to freeze: kept (and remembered)
    grown = values.concat(records, (FrozenDict({"name": "x", "n": 1.5}),))
    assert values.freeze(grown) is grown
    with_list = values.concat(grown, (FrozenDict({"l": [1]}),))  # a mutable list in a record
    frozen = values.freeze(with_list)
    assert frozen is not with_list and frozen[:-1] == grown
    assert frozen[-1] == FrozenDict({"l": (1,)}) and type(frozen[-1]["l"]) is tuple
    nested = values.concat(grown, ((1, 2),))  # not a record: frozen as usual
    assert values.freeze(nested) == nested


def test_a_remembered_list_of_records_still_counts_its_depth_and_sizes() -> None:
    records = tuple(FrozenDict({"n": i}) for i in range(10))
    assert values.freeze(records) is records  # remembered
    deep: object = records
    for _ in range(values.MAX_DEPTH - 2):
        deep = (deep,)
    values.freeze(deep)  # its records are MAX_DEPTH levels deep: allowed
    with pytest.raises(errors.ValueLimitExceededError):
        values.freeze((deep,))
    wide = tuple(FrozenDict({k: k for k in range(5)}) for _ in range(10))
    assert values.freeze(wide) is wide
    with pytest.raises(yaql_exceptions.CollectionTooLargeException):
        values.freeze(wide, limit=4)


def test_a_frozen_dict_is_not_copied_again_yet_still_counts_its_depth_and_sizes() -> None:
    template = values.freeze({"resources": {f"r{i}": {"properties": {"networks": [{"n": i}]}}
                                            for i in range(50)}})
    assert values.freeze(template) is template
    assert values.freeze({"t": template})["t"] == template  # deeper than made: walked again
    edited = values.freeze(FrozenDict({**template, "outputs": {"o": [1]}}))
    assert edited["resources"] is template["resources"] and edited["outputs"]["o"] == (1,)
    with pytest.raises(yaql_exceptions.CollectionTooLargeException):
        values.freeze(template, limit=10)  # a smaller limit walks it: 50 resources refused
    # made at level 0, six levels high: nested more than MAX_DEPTH - 6 levels down it is
    # walked again and refused, as a value never frozen before would be
    deep: object = template
    for _ in range(values.MAX_DEPTH - 6):
        deep = (deep,)
    values.freeze(deep)
    with pytest.raises(errors.ValueLimitExceededError):
        values.freeze((deep,))


def test_a_value_holding_one_part_in_many_places_is_frozen_once_and_counted_whole() -> None:
    shared: object = (1, 2, 3)
    for _ in range(12):  # 2 ** 12 copies of the first tuple, written out
        shared = FrozenDict({"a": shared, "b": (shared, 0)})
    frozen = values.freeze(shared)
    assert frozen._d["a"] is frozen._d["b"][0]  # still one part, in both places
    assert values.thaw(frozen) == values.thaw(shared)
    for _ in range(12):  # past MAX_ITEMS written out: refused, at once
        shared = FrozenDict({"a": shared, "b": (shared, 0)})
    with pytest.raises(errors.ValueLimitExceededError, match="items written out"):
        values.freeze(shared)


def test_a_part_met_again_deeper_still_counts_its_depth() -> None:
    deep: object = (1, (2,))
    for _ in range(values.MAX_DEPTH - 3):
        deep = (deep,)
    values.freeze((deep,))  # its deepest list at level MAX_DEPTH - 1: allowed
    with pytest.raises(errors.ValueLimitExceededError, match="nested more than"):
        values.freeze((deep, (deep,)))  # the second time one level deeper


NEST = class_text("t.nest", "Nest", """
    Methods:
      double:
        Arguments:
          - n:
              Contract: $.int()
        Body:
          - $l: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
          - For: i
            In: range($n)
            Do:
              - $l: dict(a => $l, b => [$l])
          - Return: len(str($l)) > 0
      printed:
        Arguments:
          - n:
              Contract: $.int()
        Body:
          - Return: str(range($n).aggregate([$1, $1], [1, 2, 3]))
      formatted:
        Arguments:
          - n:
              Contract: $.int()
        Body:
          - Return: format('{0}', range($n).aggregate([$1, $1], [1, 2, 3]))
      compared:
        Arguments:
          - n:
              Contract: $.int()
        Body:
          - Return: range($n).aggregate(list($1, $1), 1) = range($n).aggregate(list($1, $1), 1)
      mapped:
        Arguments:
          - n:
              Contract: $.int()
        Body:
          - Return: len(range($n).aggregate({a => $1, b => $1}, 1))
      found:
        Arguments:
          - n:
              Contract: $.int()
        Body:
          - Return: range($n).aggregate(list($1, $1), 1) in [range($n).aggregate(list($1, $1), 1)]
      lazy:
        Body:
          - $l: [0, 1, 2, 3]
          - Return: dict(pair => [$l.take(2), $l.skip(2)])
      quoted:
        Body:
          - Return: range(1000).toList().noSuchMethod(1)
""")


@pytest.mark.parametrize("method", ["printed", "formatted"])
def test_a_value_doubled_inside_one_expression_is_refused_before_it_is_printed(
        tmp_path: Path, method: str) -> None:
    write_package(tmp_path, "t.nest", {"Nest": NEST})
    assert run_method([tmp_path], f"t.nest.Nest.{method}", n=1) == "((1, 2, 3), (1, 2, 3))"
    with pytest.raises(errors.ValueLimitExceededError, match="items written out"):
        run_method([tmp_path], f"t.nest.Nest.{method}", n=30)


@pytest.mark.parametrize(("method", "small"), [("compared", True), ("found", True),
                                               ("mapped", 2)])
def test_a_value_doubled_inside_one_expression_is_refused_as_it_is_made_or_compared(
        tmp_path: Path, method: str, small: object) -> None:
    """Python's ``==`` walks a part held twice twice, in C code no budget interrupts."""
    write_package(tmp_path, "t.nest", {"Nest": NEST})
    assert run_method([tmp_path], f"t.nest.Nest.{method}", n=3) == small
    started = time.monotonic()
    with pytest.raises(errors.ValueLimitExceededError, match="items written out"):
        run_method([tmp_path], f"t.nest.Nest.{method}", n=60)
    assert time.monotonic() - started < 5


def test_a_list_literal_of_lazy_queries_is_checked_without_reading_them(
        tmp_path: Path) -> None:
    write_package(tmp_path, "t.nest", {"Nest": NEST})
    assert run_method([tmp_path], "t.nest.Nest.lazy") == {"pair": ((0, 1), (2, 3))}


def test_an_error_quotes_a_big_receiver_cut_short(tmp_path: Path) -> None:
    write_package(tmp_path, "t.nest", {"Nest": NEST})
    with pytest.raises(Exception, match="noSuchMethod") as error:
        run_method([tmp_path], "t.nest.Nest.quoted")
    assert len(str(error.value)) < 500
    assert "(0, 1, 2, 3" in str(error.value) and "..." in str(error.value)


def test_a_value_doubled_by_assignment_is_refused_with_the_muranopl_stack(
        tmp_path: Path) -> None:
    write_package(tmp_path, "t.nest", {"Nest": NEST})
    assert run_method([tmp_path], "t.nest.Nest.double", n=8) is True
    with pytest.raises(errors.ValueLimitExceededError, match="items written out") as error:
        run_method([tmp_path], "t.nest.Nest.double", n=24)
    (frame,) = errors.stack_of(error.value)
    assert (frame.class_name, frame.method) == ("t.nest.Nest", "double")


BOOK = class_text("t.rec", "Book", """
    Properties:
      rows:
        Contract:
          - name: $.string().notNull()
            n: $.int()
        Default: []
        Usage: InOut
    Methods:
      grow:
        Arguments:
          - rows:
              Contract: [$]
        Body:
          - For: r
            In: $rows
            Do:
              - $.rows: $.rows + [$r]
          - Return: $.rows
""")


def test_a_growing_list_of_records_keeps_its_contract(tmp_path: Path) -> None:
    write_package(tmp_path, "t.rec", {"Book": BOOK})
    rows = [{"name": f"r{i}", "n": i} for i in range(12)]
    assert values.thaw(run_method([tmp_path], "t.rec.Book.grow", rows=rows)) == rows
    odd = rows + [{"name": "extra", "n": 1, "x": 2}, {"name": "missing"}, {"name": 5, "n": "7"},
                  {"name": "none", "x": None}]
    assert values.thaw(run_method([tmp_path], "t.rec.Book.grow", rows=odd))[12:] == [
        {"name": "extra", "n": 1}, {"name": "missing", "n": None}, {"name": "5", "n": 7},
        {"name": "none", "n": None}]
    with pytest.raises(errors.ContractViolationException, match=r"rows\[12\]\[name\]\] null"):
        run_method([tmp_path], "t.rec.Book.grow", rows=rows + [{"n": 1}])
