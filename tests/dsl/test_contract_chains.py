"""Simple contract chains (``$.string().notNull()``) skip their checks only for values the
checks would return as they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dsl_helpers import class_text, write_package
from yaql.language.utils import FrozenDict

from murano_engine.dsl import errors
from murano_engine.dsl.contracts import Contract, ContractScope
from murano_engine.dsl.executor import Executor, Frame
from murano_engine.dsl.expressions import parse
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter

CHAINS = ["$.string()", "$.int()", "$.bool()", "$.notNull()", "$.string().notNull()",
          "$.int().notNull()", "$.bool().notNull()", "$.notNull().string()", "$.int().string()",
          "$.string().int()", "$.owned()", "$.notOwned().notNull()"]
VALUES = ["a", "", "5", 5, 0, 10**30, 1.5, True, False, None, (1,), (), frozenset({1}),
          FrozenDict({"a": 1})]


@pytest.fixture(scope="module")
def frame(tmp_path_factory: pytest.TempPathFactory) -> Frame:
    root: Path = tmp_path_factory.mktemp("chains")
    write_package(root, "t.chain", {"Host": class_text("t.chain", "Host", "")})
    loader = PackageLoader([root], build_interpreter())
    cls = loader.find_class("t.chain.Host")
    executor = Executor(loader)
    return Frame(executor, None, executor.new_object(cls), cls, None)


def outcome(apply: Any) -> tuple[str, Any]:
    try:
        value = apply()
    except errors.ContractViolationException as exc:
        return "violation", str(exc)
    return "value", (type(value), value)


@pytest.mark.parametrize("source", CHAINS)
def test_a_chain_gives_what_its_functions_give(source: str, frame: Frame) -> None:
    contract = Contract(parse(source), None)
    table = frame.executor.runtime.contract_functions
    names = [part.split("(")[0] for part in source.split(".")[1:]]

    def by_functions(value: Any) -> Any:
        scope = ContractScope(frame, frame.this, None, "p")
        for name in names:
            value = table[name](scope, value, (), {})
        return value

    for _ in range(2):  # the first call learns the functions, later ones may skip them
        for value in VALUES:
            scope = ContractScope(frame, frame.this, None, "p")
            assert outcome(lambda v=value, s=scope: contract.apply(v, s)) == \
                outcome(lambda v=value: by_functions(v)), value


@pytest.mark.parametrize(("spec", "value"), [
    ([{"name": parse("$.string().notNull()"), "n": parse("$.int()")}],
     (FrozenDict({"name": "a", "n": 1}), FrozenDict({"name": 5, "n": "2"}),
      FrozenDict({"name": "b"}), FrozenDict({"name": "c", "n": None, "x": 1}))),
    ([parse("$.int().notNull()")], (1, "2", 3, True)),
])
def test_collections_of_chains_check_every_item(spec: Any, value: Any, frame: Frame) -> None:
    contract = Contract(spec, None)
    scope = ContractScope(frame, frame.this, None, "p")
    first = contract.apply(value, scope)
    assert contract.apply(value, scope) == first  # and again, with the checks learnt
    if isinstance(spec[0], dict):
        assert [dict(r) for r in first] == [{"name": "a", "n": 1}, {"name": "5", "n": 2},
                                            {"name": "b", "n": None}, {"name": "c", "n": None}]
    else:
        assert first == (1, 2, 3, 1) and [type(i) for i in first] == [int] * 4
    with pytest.raises(errors.ContractViolationException, match=r"\[p\[1\]"):
        contract.apply((value[0], None) if not isinstance(spec[0], dict)
                       else (value[0], FrozenDict({"n": 1})), scope)


def test_a_dict_contract_gives_its_keys_in_their_declared_order(frame: Frame) -> None:
    contract = Contract({"name": parse("$.string()"), "n": parse("$.int()")}, None)
    scope = ContractScope(frame, frame.this, None, "p")
    for _ in range(2):
        for record in (FrozenDict({"n": 1, "name": "a"}), FrozenDict({"name": "a", "n": 1}),
                       FrozenDict({"name": "a", "x": 2, "n": 1})):
            result = contract.apply(record, scope)
            assert list(result) == ["name", "n"] and dict(result) == {"name": "a", "n": 1}
    numbered = Contract({1: parse("$.int()")}, None)
    assert list(numbered.apply(FrozenDict({True: 5}), scope)) == [1]


QUICK = ["$.int().check($ >= 0)", "$.int().notNull().check($ > 1024)", "$.check($ != 3)",
         "$.string().check($ = 0)", "$.int().check($ <= 2.5)", "$.int().check($ < 0)"]


@pytest.mark.parametrize("source", QUICK)
def test_a_quick_check_passes_only_what_the_contract_returns_as_it_is(source: str,
                                                                      frame: Frame) -> None:
    contract = Contract(parse(source), None)
    passed = []
    for value in [*VALUES, -1, 3, 1024, 1025, 2.5, 2.0]:
        if contract.quick is not None and contract.quick(value):
            passed.append(value)
            scope = ContractScope(frame, frame.this, None, "p")
            result = contract.apply(value, scope)
            assert result is value or (type(result), result) == (type(value), value), value
    expected = {"$.int().check($ >= 0)": [5, 0, 10**30, 3, 1024, 1025],
                "$.int().notNull().check($ > 1024)": [10**30, 1025],
                "$.int().check($ <= 2.5)": [0, -1],
                "$.int().check($ < 0)": [-1]}.get(source, [])
    assert passed == expected


def test_a_list_of_kept_items_is_passed_quickly_and_only_then(frame: Frame) -> None:
    contract = Contract([parse("$.string()")], None)
    assert contract.quick(("a", "b", None)) and contract.quick(())
    assert not contract.quick(("a", 1)) and not contract.quick(["a"])
    assert Contract([parse("$.string()"), 1], None).quick is None
    scope = ContractScope(frame, frame.this, None, "p")
    assert contract.apply(("a", 1), scope) == ("a", "1")
