"""Script executors: Application (shell or PowerShell), v1 PowerShell plans, unsupported types."""

from __future__ import annotations

import base64
import binascii
import json
import shutil
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from murano_agent.calls import Remaining, ScriptCalls
from murano_agent.plans import ERROR_INVALID, ERROR_SCRIPT, PlanError


class AttrDict(dict):
    """A dict whose keys also read as attributes (``deploy().stdout`` in a plan Body)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def find_powershell(executable: str) -> str:
    """The PowerShell executable's full path, or a PlanError naming the setting."""
    found = shutil.which(executable)
    if not found:
        raise PlanError(
            ERROR_INVALID,
            f"PowerShell executable {executable!r} was not found "
            "(agent setting [DEFAULT] powershell)",
        )
    return found


def _powershell_line(executable: str, script: Path) -> str:
    return (
        f'"{find_powershell(executable)}" -NoProfile -NonInteractive '
        f'-ExecutionPolicy Bypass -File "{script}"'
    )


class ApplicationScript:
    """An ``Application`` script: its entry point run with a command line.

    ``.ps1`` entry points run under PowerShell, anything else through the shell
    (``./"file" args`` on POSIX). Called as ``name(commandline='', input=None)``
    (or ``name.anyFunction(...)``, the function name being ignored, as in Murano).
    Each call is one journaled script call (see :mod:`murano_agent.calls`).
    """

    def __init__(
        self,
        name: str,
        prepare: Callable[[], Path],
        options: dict[str, Any],
        remaining: Remaining,
        powershell: str,
        calls: ScriptCalls,
    ) -> None:
        self._name = name
        self._prepare = prepare
        self._options = options
        self._remaining = remaining
        self._powershell = powershell
        self._calls = calls

    def __getattr__(self, function: str) -> Callable[..., AttrDict]:
        if function.startswith("_"):
            raise AttributeError(function)
        return self.__call__

    def _command(self, commandline: str) -> tuple[list[str] | str, Path]:
        """The entry point's command (written first) and the folder it runs in.

        With no command line to parse, a POSIX entry point is run directly (one shell
        fewer; the outcome is the same, since a file that cannot be executed directly,
        with no ``#!`` line for instance, is run by the shell that starts it).
        """
        entry = self._prepare()
        if entry.suffix.lower() == ".ps1":
            line = _powershell_line(self._powershell, entry)
        elif sys.platform == "win32":
            line = f'"{entry}"'
        else:
            mode = entry.stat().st_mode
            if mode & (stat.S_IRUSR | stat.S_IXUSR) != stat.S_IRUSR | stat.S_IXUSR:
                entry.chmod(mode | stat.S_IRUSR | stat.S_IXUSR)
            if not commandline:
                return [f"./{entry.name}"], entry.parent
            line = f'./"{entry.name}"'
        return f"{line} {commandline}".rstrip(), entry.parent

    def __call__(self, commandline: str = "", input: str | None = None) -> AttrDict:
        done = self._calls.run(
            self._name, lambda: self._command(str(commandline)), input, self._remaining
        )
        result = AttrDict(
            exitCode=done.exit_code,
            stdout=_captured(done.stdout) if self._options.get("captureStdout", True) else None,
            stderr=_captured(done.stderr) if self._options.get("captureStderr", True) else None,
        )
        if done.timed_out:
            raise PlanError(
                ERROR_SCRIPT, f"script {self._name!r} timed out (plan time limit reached)", result
            )
        if done.interrupted:
            raise PlanError(
                ERROR_SCRIPT,
                f"script {self._name!r} was interrupted: the agent stopped while it ran and "
                "it ended without an exit code (killed, or the machine restarted); it is not "
                "run again",
                result,
            )
        if done.exit_code and self._options.get("verifyExitcode", True):
            raise PlanError(
                ERROR_SCRIPT, f"script {self._name!r} exited with code {done.exit_code}", result
            )
        return result


def _captured(output: str) -> str | None:
    """A script's output as murano-agent reports it: stripped, null when there was none."""
    return output.strip() if output else None


class UnsupportedScript:
    """A Chef or Puppet script: calling it gives a clear error result."""

    def __init__(self, name: str, kind: str) -> None:
        self._message = f"script {name!r}: {kind} scripts are not supported by this agent"

    def __getattr__(self, function: str) -> Callable[..., None]:
        if function.startswith("_"):
            raise AttributeError(function)
        return self.__call__

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise PlanError(ERROR_INVALID, self._message)


def ps_literal(value: Any) -> str:
    """``value`` (decoded JSON) written as a PowerShell literal."""
    if value is None:
        return "$null"
    if isinstance(value, bool):
        return "$true" if value else "$false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, list):
        return "@(" + ", ".join(ps_literal(v) for v in value) + ")"
    if isinstance(value, dict):
        items = "; ".join(f"{ps_literal(str(k))} = {ps_literal(v)}" for k, v in value.items())
        return "@{" + items + "}"
    raise TypeError(f"cannot pass {type(value).__name__} to PowerShell")


_RUNNER_HEAD = """$ErrorActionPreference = 'Stop'
Set-Location -LiteralPath {folder}
function Save-Result([int]$Index, [bool]$IsException, $Value) {{
    $json = ConvertTo-Json -InputObject @{{IsException = $IsException; Result = @($Value)}} `
        -Depth 10 -Compress
    $path = Join-Path {folder} "result-$Index.json"
    [IO.File]::WriteAllText("$path.tmp", $json)
    Move-Item -Force -LiteralPath "$path.tmp" -Destination $path
}}
"""

_RUNNER_COMMAND = """$arguments = {arguments}
try {{
    $value = & {name} @arguments
    Save-Result {index} $false $value
}} catch {{
    Save-Result {index} $true @($_.Exception.GetType().FullName, $_.Exception.Message, {name},
        @{{ScriptStackTrace = $_.ScriptStackTrace;
           PositionMessage = $_.InvocationInfo.PositionMessage}})
    exit 1
}}
"""


def _finished_commands(folder: Path) -> list[dict[str, Any]]:
    done = []
    while (path := folder / f"result-{len(done)}.json").exists():
        done.append(json.loads(path.read_text(encoding="utf-8-sig")))
    return done


def runner_script(
    folder: Path, scripts: list[Path], commands: list[dict[str, Any]], first: int
) -> str:
    """The PowerShell that loads a v1 plan's ``scripts`` and runs its ``commands`` from
    index ``first`` on, saving each command's result in ``folder``."""
    lines = [_RUNNER_HEAD.format(folder=ps_literal(str(folder)))]
    lines += [f". {ps_literal(str(path))}\n" for path in scripts]
    for index in range(first, len(commands)):
        command = commands[index]
        lines.append(
            _RUNNER_COMMAND.format(
                arguments=ps_literal(command.get("Arguments", {})),
                name=ps_literal(command["Name"]),
                index=index,
            )
        )
    return "".join(lines)


def run_v1(
    plan: dict[str, Any], folder: Path, powershell: str, remaining: Remaining, calls: ScriptCalls
) -> list[Any]:
    """Run a v1 plan: load every script, then call the Commands not yet done.

    Each command's result is saved as it finishes, so a plan interrupted by a
    crash or a reboot resumes with the next command (once ``calls`` has settled
    the PowerShell run left behind). Returns the per-command results; stops at
    the first command that raised.
    """
    executable = find_powershell(powershell)
    done = _finished_commands(folder)
    commands = plan.get("Commands", [])
    if len(done) == len(commands) or (done and done[-1].get("IsException")):
        return done
    scripts = []
    for index, script in enumerate(plan.get("Scripts", [])):
        path = folder / f"script-{index}.ps1"
        try:
            path.write_bytes(base64.b64decode(script, validate=False))
        except binascii.Error as exc:
            raise PlanError(ERROR_INVALID, f"Scripts[{index}] is not valid base64: {exc}") from None
        scripts.append(path)
    runner = folder / "runner.ps1"
    runner.write_text(runner_script(folder, scripts, commands, len(done)), encoding="utf-8-sig")
    argv = [executable, "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass"]
    command = ([*argv, "-File", str(runner)], folder)
    completed = calls.run("PowerShell", lambda: command, None, remaining, replay=False)
    done = _finished_commands(folder)
    if completed.timed_out:
        raise PlanError(ERROR_SCRIPT, "PowerShell plan timed out (plan time limit reached)")
    if len(done) < len(commands) and not (done and done[-1].get("IsException")):
        detail = completed.stderr.strip() or completed.stdout.strip()
        raise PlanError(
            ERROR_SCRIPT,
            f"PowerShell exited with code {completed.exit_code} before command "
            f"{len(done)} finished: {detail}",
        )
    return done
