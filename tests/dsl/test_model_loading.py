"""Loading a model: object dicts reach ``class()`` contracts as the JSON has them, and
what the objects keep of them is frozen and bounded all the same."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
from dsl_helpers import class_text, write_package
from yaql.language import exceptions as yaql_exceptions
from yaql.language.utils import FrozenDict

from murano_engine.cli.main import RECURSION_LIMIT
from murano_engine.dsl import errors, values
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.limits import ITERATOR_LIMIT
from murano_engine.dsl.model import load_model
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter

NODE = class_text("t.load", "Node", """
    Properties:
      child:
        Contract: $.class(Node)
      children:
        Contract: [$.class(Node)]
      data:
        Contract: $
    """)


@pytest.fixture
def executor(tmp_path: Path) -> Executor:
    write_package(tmp_path, "t.load", {"Node": NODE})
    return Executor(PackageLoader([tmp_path], build_interpreter()))


def _node(object_id: str, **props: object) -> dict:
    return {"?": {"id": object_id, "type": "t.load.Node"}, **props}


def test_what_objects_keep_of_their_dicts_is_frozen_and_the_model_is_left_as_it_was(
        executor: Executor) -> None:
    inner = _node("inner", data={"ports": [80, 443]})
    inner["?"].update(metadata={"tags": ["a"]}, _designer={"x": [1, 2]}, name={"n": [1]})
    root = _node("root", children=[inner], data=[{"k": "v"}])
    root["?"].update(metadata={"tags": ["b"]}, _designer={"y": {"z": [3]}})
    model = {"Objects": root}
    written = copy.deepcopy(model)

    loaded = load_model(executor, model)

    assert model == written
    nested = loaded.props["children"][0]
    assert type(loaded.props["children"]) is tuple and nested.id == "inner"
    assert nested.props["data"] == FrozenDict({"ports": (80, 443)})
    assert loaded.props["data"] == (FrozenDict({"k": "v"}),)
    for obj, tag in ((loaded, "b"), (nested, "a")):
        assert type(obj.metadata) is FrozenDict and obj.metadata["tags"] == (tag,)
    assert loaded.designer == {"_designer": FrozenDict({"y": FrozenDict({"z": (3,)})})}
    assert nested.designer == {"_designer": FrozenDict({"x": (1, 2)})}
    assert nested.name == FrozenDict({"n": (1,)})


def _chain(levels: int) -> dict:
    node = _node(f"n{levels}")
    for level in range(levels - 1, 0, -1):
        node = _node(f"n{level}", child=node)
    return node


def test_objects_nested_deeper_than_the_limit_are_refused(executor: Executor) -> None:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(RECURSION_LIMIT)  # as the engine's commands run
    try:
        deepest = load_model(executor, {"Objects": _chain(values.MAX_DEPTH)})
        with pytest.raises(errors.ValueLimitExceededError,
                           match=f"objects are nested more than {values.MAX_DEPTH} levels"):
            load_model(Executor(executor.loader), {"Objects": _chain(values.MAX_DEPTH + 1)})
    finally:
        sys.setrecursionlimit(limit)
    depth = 0
    while deepest is not None:
        depth += 1
        deepest = deepest.props["child"]
    assert depth == values.MAX_DEPTH


def test_a_list_of_more_objects_than_the_iterator_limit_is_refused(executor: Executor) -> None:
    fits = [_node(f"c{i}") for i in range(ITERATOR_LIMIT)]
    assert len(load_model(executor, {"Objects": _node("r", children=fits)})
               .props["children"]) == ITERATOR_LIMIT
    with pytest.raises(yaql_exceptions.CollectionTooLargeException):
        load_model(Executor(executor.loader), {"Objects": _node(
            "r", children=[*fits, _node("one-more")])})
