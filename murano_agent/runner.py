"""Running one stored plan to its result message (never raises for a bad plan)."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import shutil
import textwrap
import time
from pathlib import Path
from typing import Any

from murano_agent import executors, files, plans, results
from murano_agent.calls import Remaining, ScriptCalls
from murano_agent.config import AgentConfig
from murano_agent.plans import ERROR_INVALID, ERROR_UNEXPECTED, PlanError

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A plan's result message, whether the plan asked for a reboot afterwards, and
    whether it ran (False: refused as not a valid plan, its Body never started)."""

    result: dict[str, Any]
    reboot: bool
    ran: bool = True


def _jsonable(value: Any) -> Any:
    """What a Body returned, as JSON data (a PlanError when it cannot be stored and sent)."""
    try:
        data = json.loads(json.dumps(value, default=str))
    except (ValueError, RecursionError) as exc:
        message = f"the plan Body returned a value that is not JSON: {exc}"
        raise PlanError(ERROR_INVALID, message) from None
    plans.check_depth(data, "the value the plan Body returned")
    return data


def describe(exc: BaseException) -> str:
    """``Type: message`` for an exception, even one whose ``str()`` itself fails."""
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - the plan's own object; anything may happen
        text = "<message cannot be shown>"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _inline_files(plan: dict[str, Any]) -> set[str]:
    """Where a (valid) v2 plan's inline files go: ``<script>/<Name>`` below the work folder."""
    paths = set()
    for name, script in plan["Scripts"].items():
        if script["Type"] != "Application":
            continue
        for file_id in (script["EntryPoint"], *plans.script_file_ids(script)):
            entry = plan["Files"][file_id]
            if "URL" not in entry:
                paths.add(f"{name}/{plans.safe_relative_path(entry['Name'], file_id)}")
    return paths


class PlanRunner:
    """Executes plans under the configured work folder.

    v2 plans (one at a time) share the folder ``work``: before each plan, what an
    earlier plan left there is deleted, except the files this plan is about to
    write anyway, which are overwritten. So a stream of plans running the same
    scripts creates and deletes no files or folders. A plan resumed after a crash
    (its earlier attempt started scripts) finds the folder as that attempt left it.
    v1 plans get a folder per plan, kept across a reboot so the plan resumes.
    """

    def __init__(self, cfg: AgentConfig) -> None:
        self._cfg = cfg
        self._root = cfg.files_root
        self._work = self._root / "work"
        self._work.mkdir(parents=True, exist_ok=True)

    def run(self, plan_id: str, body: bytes, calls: ScriptCalls) -> Outcome:
        """Run the plan in ``body``, its script calls journaled in ``calls``; any failure
        becomes an error result."""
        try:
            return self._run(plan_id, body, calls)
        except Exception as exc:  # a fault of the agent's own: answered, never looping
            LOG.exception("plan %s: the agent failed while running it", plan_id)
            message = f"the agent failed while running the plan: {describe(exc)}"
            return Outcome(self.failure(plan_id, body, message), False)

    def _run(self, plan_id: str, body: bytes, calls: ScriptCalls) -> Outcome:
        deadline = time.monotonic() + self._cfg.plan_timeout

        def remaining() -> float:
            return max(0.0, deadline - time.monotonic())

        calls.settle(remaining)
        try:
            plan = plans.decode(body, self._cfg.max_message_bytes)
            version = plans.format_version(plan)
        except PlanError as exc:
            return Outcome(results.v2_failure(plan_id, exc.code, exc.message, exc.info), False,
                           ran=False)
        if version[0] == 1:
            folder = self._root / ("plan-" + re.sub(r"[^\w.-]", "_", plan_id))
            try:
                return self._run_v1(plan, folder, remaining, calls)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        return self._run_v2(plan_id, plan, version, remaining, calls)

    def failure(self, plan_id: str, body: bytes, message: str) -> dict[str, Any]:
        """An error result for a plan not run, shaped for the plan's format."""
        try:
            v1 = plans.format_version(plans.decode(body, self._cfg.max_message_bytes))[0] == 1
        except PlanError:
            v1 = False
        if v1:
            return results.v1_failure("AgentError", message)
        return results.v2_failure(plan_id, ERROR_UNEXPECTED, message)

    def _run_v1(
        self, plan: dict[str, Any], folder: Path, remaining: Remaining, calls: ScriptCalls
    ) -> Outcome:
        try:
            plans.validate_v1(plan)
            folder.mkdir(parents=True, exist_ok=True)
            done = executors.run_v1(plan, folder, self._cfg.powershell, remaining, calls)
        except PlanError as exc:
            return Outcome(results.v1_failure("AgentError", exc.message, exc.info), False)
        except OSError as exc:
            return Outcome(results.v1_failure(type(exc).__name__, str(exc)), False)
        failed = any(entry.get("IsException") for entry in done)
        reboot = plan.get("RebootOnCompletion", 0)
        return Outcome(results.v1_success(done), reboot > 1 or (reboot == 1 and not failed))

    def _run_v2(
        self,
        plan_id: str,
        plan: dict[str, Any],
        version: tuple[int, int, int],
        remaining: Remaining,
        calls: ScriptCalls,
    ) -> Outcome:
        reboot = plan.get("Action") == "Reboot"
        try:
            plans.validate_v2(plan, version)
        except PlanError as exc:
            result = results.v2_failure(plan_id, exc.code, exc.message, _jsonable(exc.info))
            return Outcome(result, reboot, ran=False)
        try:
            if not calls.resumed:
                files.sweep(self._work, _inline_files(plan))
            value = _jsonable(self._call_body(plan_id, plan, remaining, calls))
        except PlanError as exc:
            result = results.v2_failure(plan_id, exc.code, exc.message, _jsonable(exc.info))
            return Outcome(result, reboot)
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: the plan's code failed
            LOG.info("plan %s: Body raised %s", plan_id, describe(exc))
            message = f"plan Body raised {describe(exc)}"
            return Outcome(results.v2_failure(plan_id, ERROR_UNEXPECTED, message), reboot)
        return Outcome(results.v2_success(plan_id, value), reboot)

    def _scripts(
        self, plan: dict[str, Any], remaining: Remaining, calls: ScriptCalls
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, script in plan["Scripts"].items():
            if script["Type"] != "Application":
                out[name] = executors.UnsupportedScript(name, script["Type"])
                continue
            out[name] = executors.ApplicationScript(
                name,
                _Preparer(plan["Files"], script, self._work, name, remaining),
                script.get("Options", {}),
                remaining,
                self._cfg.powershell,
                calls,
            )
        return out

    def _call_body(
        self, plan_id: str, plan: dict[str, Any], remaining: Remaining, calls: ScriptCalls
    ) -> Any:
        body = textwrap.dedent(plan.get("Body") or "return None")
        source = "def __plan_body__():\n" + textwrap.indent(body, "    ") + "\n"
        try:
            code = compile(source, f"<plan {plan_id} Body>", "exec")
        except SyntaxError as exc:
            raise PlanError(ERROR_INVALID, f"plan Body is not valid Python: {exc}") from None
        namespace: dict[str, Any] = {
            "args": executors.AttrDict(plan.get("Parameters") or {}),
            **self._scripts(plan, remaining, calls),
        }
        exec(code, namespace)  # plans carry Python by protocol (signed when keyed)
        try:
            return namespace["__plan_body__"]()
        except NameError as exc:
            raise PlanError(
                ERROR_INVALID, f"plan Body uses {exc.name!r}, which is not a script of this plan"
            ) from None


class _Preparer:
    """Writes one script's files into its folder on first call; returns the entry point."""

    def __init__(
        self,
        all_files: dict[str, Any],
        script: dict[str, Any],
        work: Path,
        name: str,
        remaining: Remaining,
    ) -> None:
        self._files = all_files
        self._script = script
        self._work = work
        self._folder = work / name
        self._remaining = remaining
        self._entry: Path | None = None

    def __call__(self) -> Path:
        if self._entry is None:
            entry_id = self._script["EntryPoint"]
            written = {
                file_id: files.put_file(
                    file_id, self._files[file_id], self._folder, self._work, self._remaining()
                )
                for file_id in dict.fromkeys([entry_id, *plans.script_file_ids(self._script)])
            }
            self._entry = written[entry_id]
        return self._entry
