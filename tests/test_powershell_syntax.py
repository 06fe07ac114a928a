"""Every PowerShell script of the repository parses (tree-sitter-powershell, no skip).

The ``.ps1`` files outside ``dsl_packages/`` (whose scripts
tests/apps/test_app_packages.py parses per package), every PowerShell ``Body``
of a plan file (a ``Files`` entry named ``*.ps1``) in a YAML or template file,
and the runner the agent writes for v1 plans. Errors name the file and line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from powershell_syntax import syntax_errors

from murano_agent.executors import runner_script

REPO = Path(__file__).resolve().parents[1]
_SKIPPED = {"dsl_packages", "build", "dist", "node_modules"}


def _files(*suffixes: str) -> list[Path]:
    """The repository's files with these suffixes (no hidden or build folders)."""
    return sorted(
        path for path in REPO.rglob("*")
        if path.suffix in suffixes and path.is_file()
        and not any(part.startswith(".") or part in _SKIPPED or part.endswith(".egg-info")
                    for part in path.relative_to(REPO).parts[:-1]))


def script_bodies(path: Path) -> Iterator[tuple[str, int]]:
    """Each PowerShell ``Body`` of a plan file in a YAML document: its text and the line
    of ``path`` it starts on."""
    try:
        documents = list(yaml.compose_all(path.read_text(encoding="utf-8")))
    except yaml.YAMLError:
        return  # not plain YAML (a MuranoPL class with tags, say): no plan files in it
    pending = [d for d in reversed(documents) if d is not None]  # in file order
    while pending:
        node = pending.pop()
        if isinstance(node, yaml.MappingNode):
            fields = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
            name, body = fields.get("Name"), fields.get("Body")
            if (isinstance(name, yaml.ScalarNode) and name.value.lower().endswith(".ps1")
                    and isinstance(body, yaml.ScalarNode)):
                block = body.style in ("|", ">")
                yield body.value, body.start_mark.line + 1 + block
            pending.extend(reversed([v for _, v in node.value]))
        elif isinstance(node, yaml.SequenceNode):
            pending.extend(reversed(node.value))


PS1 = _files(".ps1")


@pytest.mark.parametrize("path", PS1, ids=[str(p.relative_to(REPO)) for p in PS1])
def test_ps1_file_parses(path: Path) -> None:
    assert syntax_errors(path.read_bytes(), str(path.relative_to(REPO))) == []


def test_ps1_files_are_found() -> None:
    names = {str(p.relative_to(REPO)) for p in PS1}
    assert {"meta/io.murano/Resources/windows-init.ps1",
            "murano_agent/packaging/install-windows-service.ps1"} <= names


def test_every_powershell_body_of_a_plan_file_parses() -> None:
    problems = []
    for path in _files(".yaml", ".yml", ".template"):
        for body, line in script_bodies(path):
            problems += syntax_errors(body, str(path.relative_to(REPO)), line)
    assert problems == []


def test_bodies_are_found_and_errors_named_by_file_and_line(tmp_path: Path) -> None:
    template = tmp_path / "Plan.template"
    template.write_text(
        "FormatVersion: 2.1.0\n"
        "Files:\n"
        "  good: {Name: good.ps1, BodyType: Text, Body: 'Write-Output 1'}\n"
        "  broken:\n"
        "    Name: Broken.PS1\n"
        "    BodyType: Text\n"
        "    Body: |\n"
        "      function Get-It {\n"
        "        if ($x -eq 1 {\n"
        "        }\n"
        "      }\n"
        "  shell: {Name: run.sh, Body: 'if ($x {'}\n")
    bodies = list(script_bodies(template))
    assert [line for _, line in bodies] == [3, 8]
    problems = [p for body, line in bodies for p in syntax_errors(body, "Plan.template", line)]
    assert problems == ["Plan.template:9:3: syntax error at 'if ($x -eq 1 { }'"]


def test_the_v1_runner_the_agent_writes_parses(tmp_path: Path) -> None:
    """With arguments of every JSON kind, quotes in names and paths included."""
    folder = tmp_path / "plan-it's"
    commands = [
        {"Name": "Do-It", "Arguments": {"Text": "it's", "List": [1, 2.5, None, True],
                                        "Map": {"a b": {"c": False}}}},
        {"Name": "Get-Nothing"},
    ]
    for first in (0, 1):
        script = runner_script(folder, [folder / "script-0.ps1"], commands, first)
        assert syntax_errors(script, "runner.ps1") == [], script
