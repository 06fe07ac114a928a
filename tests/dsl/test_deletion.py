"""An environment's deletion (a task without an action): destruction errors are logged
and never raised inside MuranoPL (Murano's rule), but a deletion whose objects did not
all go fails and keeps the model, so nothing they hold is forgotten."""

from __future__ import annotations

import uuid
from pathlib import Path

from dsl_helpers import class_text, write_package

from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.engine.tasks import run_task

HOLDER = class_text("t.del", "Holder", """
Properties:
  name:
    Contract: $.string()
  stuck:
    Contract: $.bool()
    Default: false
Methods:
  .destroy:
    Body:
      - If: $.stuck
        Then:
          - Throw: t.del.StillInUse
            Message: format('{0} still holds its server', $.name)
""")


def _task(tmp_path: Path, stuck: bool) -> tuple[PackageLoader, dict]:
    write_package(tmp_path, "t.del", {"Holder": HOLDER})
    loader = PackageLoader([tmp_path], build_interpreter())
    objects = {"?": {"id": uuid.uuid4().hex, "type": "t.del.Holder"}, "name": "kept",
               "stuck": stuck}
    model = {"Objects": objects, "ObjectsCopy": objects, "Attributes": []}
    return loader, {"id": uuid.uuid4().hex, "model": model, "action": None}


def test_a_deletion_whose_objects_failed_to_go_fails_and_keeps_the_model(tmp_path: Path) -> None:
    loader, task = _task(tmp_path, stuck=True)
    result = run_task(task, loader)
    assert result["action"]["isException"] is True
    message = result["action"]["result"]["message"]
    assert message.startswith("the environment could not be deleted: t.del.Holder.destroy")
    assert "kept still holds its server" in message and "deleted again" in message
    assert result["model"]["Objects"]["name"] == "kept"  # to be deleted again


def test_a_deletion_whose_objects_all_went_forgets_the_model(tmp_path: Path) -> None:
    loader, task = _task(tmp_path, stuck=False)
    result = run_task(task, loader)
    assert result["action"]["isException"] is False
    assert result["model"]["Objects"] is None
