"""``murano-engine plan``: what a deploy, a redeploy or an action would do.

``plan MODEL -l DIR [--state FILE]`` runs the deploy of MODEL (merged with what the
state file holds, as ``deploy`` merges it), ``plan [MODEL] --state FILE --action
OBJECT METHOD [--arg NAME=JSON ...]`` the action, both with
:func:`murano_engine.engine.plan.run_plan`: nothing is made, changed or sent, and
the state file and its journal are read, never written. The plan is printed as
text, or as JSON with ``--json``; ``--report FILE.html`` draws it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def plan_command(options: Any) -> int:
    """Handler of ``murano-engine plan``; 1 when the run would fail."""
    from murano_engine.cli import held_environments
    from murano_engine.cli.deploy import (
        _given_model,
        _read_state,
        check_action,
        check_same_environment,
        incoming_model,
        journal_path,
        object_id_of,
        remembered_run,
    )
    from murano_engine.dsl.budget import Budget
    from murano_engine.dsl.packages import PackageLoader
    from murano_engine.engine.config import load_config
    from murano_engine.engine.interpreter import build_interpreter
    from murano_engine.engine.plan import run_plan, text

    state_path = Path(options.state) if options.state else None
    previous = _read_state(state_path) if state_path is not None else None
    run = remembered_run(options, previous)
    config = load_config(run["config"])
    if options.action is None and not options.model:
        raise SystemExit("error: plan takes MODEL (the deploy to plan), or --state FILE "
                         "--action OBJECT METHOD (an action of a deployed environment)")
    if options.model:
        if state_path is not None:
            check_same_environment(state_path, previous, options, config)
        model = incoming_model(_given_model(options), previous)
    elif previous is None:
        raise SystemExit(f"error: the state file {state_path or '(none given)'} does not "
                         "exist: an action is planned on a deployed environment (--state)")
    else:
        model = {k: v for k, v in previous.items() if k not in ("Resources", "Run")}
    objects = model.get("Objects") or {}
    environment_id = str((objects.get("?") or {}).get("id") or "")
    if state_path is not None and previous is None and environment_id:
        held_environments.check_not_held_elsewhere(config, state_path, environment_id)
    loader = PackageLoader(run["packages"], build_interpreter())
    for problem in loader.problems:
        print(f"warning: {problem}", file=sys.stderr)
    if options.action is not None:
        object_id = object_id_of(model, options.action[0])
        args = dict(options.args)
        check_action(loader, model, object_id, options.action[1], args)
        action: dict[str, Any] = {"object_id": object_id, "method": options.action[1],
                                  "args": args}
    else:
        action = {"object_id": environment_id, "method": "deploy", "args": {}}
    if state_path is not None and journal_path(state_path).exists():
        print(f"warning: {journal_path(state_path)} holds a run that was interrupted; the "
              "plan shows a run from what the state file holds, not that run carried on",
              file=sys.stderr)
    plan = run_plan({"id": environment_id, "action": action, "model": model}, loader, config,
                    Budget.from_config(config))
    if options.report:
        from murano_engine.web.plan_picture import document
        Path(options.report).write_text(document(plan), encoding="utf-8")
    if options.json:
        # one line, as machines read it (json's C encoder: a tenth of an indented dump's time)
        print(json.dumps(plan, sort_keys=True, default=str))
    else:
        sys.stdout.write(text(plan))
        if options.report:
            print(f"plan picture written to {options.report}")
    return 1 if plan["outcome"] == "failed" else 0


def add_parser(commands: Any) -> Any:
    """The ``plan`` command's parser (``murano_engine.cli.main`` registers it and its
    handler, which sets ``model`` and ``args`` as the other commands do)."""
    plan = commands.add_parser(
        "plan", help="show what a deploy or an action would do, doing nothing",
        usage="%(prog)s [MODEL] [-l DIR ...] [--config FILE] [--state FILE] "
              "[--action OBJECT METHOD [--arg NAME=JSON ...]] [--json] [--report FILE.html]")
    plan.add_argument("model", nargs="?",
                      help="object model (JSON) to deploy; without it, --action plans an "
                           "action of the environment --state holds")
    plan.add_argument("-l", "--load-packages-from", nargs="+", action="extend", default=[],
                      metavar="DIR", help="folders holding packages (added to those the "
                                          "state file remembers)")
    plan.add_argument("--config", help="engine configuration (INI); default: the one the "
                                       "state file remembers")
    plan.add_argument("--state", help="the environment's state file: the plan is of a "
                                      "redeploy of what it holds (read, not written)")
    plan.add_argument("--action", nargs=2, metavar=("OBJECT", "METHOD"),
                      help="plan this public method of an object (its id or name) instead "
                           "of a deploy")
    plan.add_argument("--arg", action="append", default=[], metavar="NAME=JSON",
                      dest="raw_args", help="a keyword argument of the action")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--report", metavar="FILE.html",
                      help="write the plan's picture (lanes per server, planned plans, "
                           "stack changes) to this self-contained HTML file")
    return plan
