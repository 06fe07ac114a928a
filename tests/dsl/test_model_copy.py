"""The model written after a run: ObjectsCopy equals Objects and shares nothing with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from murano_engine.dsl import model, serializer
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter

WORKLOADS = Path(__file__).resolve().parents[2] / "benchmarks" / "workloads"


def _containers(value: Any) -> list[Any]:
    found = []
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict | list):
            found.append(item)
            pending.extend(item.values() if isinstance(item, dict) else item)
    return found


def test_the_copy_is_equal_and_shares_no_container() -> None:
    items = [{"?": {"id": f"item-{i}", "type": "bench.workloads.Item"}, "name": f"item-{i}",
              "size": i, "tags": ["bench", f"tag-{i % 3}"]} for i in range(20)]
    executor = Executor(PackageLoader([WORKLOADS], build_interpreter()))
    root = model.load_model(executor, {"Objects": {
        "?": {"id": "root", "type": "bench.workloads.Objects"}, "items": items}})
    written = serializer.serialize_model(root)
    assert written["ObjectsCopy"] == written["Objects"]
    assert json.dumps(written["ObjectsCopy"]) == json.dumps(written["Objects"])
    originals = {id(c) for c in _containers(written["Objects"])}
    assert len(originals) > 40
    assert not originals & {id(c) for c in _containers(written["ObjectsCopy"])}
    assert [o["name"] for o in written["ObjectsCopy"]["items"]] == [i["name"] for i in items]
