"""Deep data and YAML bombs end in one clean error naming the file, fast, never a crash.

The crash cases run ``murano-engine`` as a subprocess: before the parsers
were bounded, each killed it with SIGSEGV (return code -11) or ran for tens of
seconds.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from dsl_helpers import class_text, cli, run_method, write_package

from murano_engine.dsl.errors import LoadError
from murano_engine.dsl.expressions import Expression, parse
from murano_engine.dsl.json_loader import load_json
from murano_engine.dsl.yaml_loader import MAX_DEPTH, MAX_NODES, load_plain

DEEP = 20_000
READER = class_text("t.res", "Reader", """
    Methods:
      json:
        Arguments:
          - name:
              Contract: $.string().notNull()
        Body:
          - Return: new('io.murano.system.Resources').json($name)
      yaml:
        Arguments:
          - name:
              Contract: $.string().notNull()
        Body:
          - Return: new('io.murano.system.Resources').yaml($name)
""")


def nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


def alias_bomb(levels: int) -> str:
    """A manifest whose aliases expand to 10**levels leaves."""
    lines = ["Format: 1.4", "FullName: t.bomb", "l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def finishes_cleanly(*args: str, limit: float = 10.0) -> str:
    """Run the CLI; it must exit with 1 (not a signal) within ``limit`` seconds."""
    started = time.monotonic()
    done = cli(*args)
    elapsed = time.monotonic() - started
    assert done.returncode == 1, (done.returncode, done.stderr[-500:])
    assert elapsed < limit
    assert "Traceback" not in done.stderr
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def resources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    package = write_package(root, "t.res", {"Reader": READER})
    (package / "Resources").mkdir()
    (package / "Resources" / "deep.json").write_text(nested_list(DEEP))
    (package / "Resources" / "deep.yaml").write_text(nested_list(2 * DEEP))
    (package / "Resources" / "fine.json").write_text('{"a": [1, {"b": "[[["}]}')
    (package / "Resources" / "fine.yaml").write_text("a: [1, {b: c}]\n")
    return root


@pytest.mark.parametrize(("method", "resource", "message"), [
    ("json", "deep.json", f"JSON nested deeper than {MAX_DEPTH} levels"),
    ("yaml", "deep.yaml", f"YAML nested deeper than {MAX_DEPTH} levels"),
], ids=["json", "yaml"])
def test_a_deep_resource_is_a_clean_error(resources: Path, method: str, resource: str,
                                          message: str) -> None:
    out = finishes_cleanly("run", "-l", str(resources), f"t.res.Reader.{method}",
                           "--arg", f"name={resource}")
    first = out.splitlines()[0]
    assert first.startswith(f"error: {resources / 't.res' / 'Resources' / resource}")
    assert first.endswith(message)
    assert "t.res.Reader." + method in out  # the MuranoPL stack


def test_after_a_deep_resource_the_interpreter_goes_on(resources: Path) -> None:
    with pytest.raises(LoadError, match="JSON nested deeper"):
        run_method([resources], "t.res.Reader.json", name="deep.json")
    assert run_method([resources], "t.res.Reader.json", name="fine.json") == {
        "a": (1, {"b": "[[["})}
    assert run_method([resources], "t.res.Reader.yaml", name="fine.yaml") == {
        "a": (1, {"b": "c"})}


@pytest.mark.parametrize("body", [
    f"- Return: {nested_list(DEEP)}",          # a YAML flow list
    f"- Return: {'1' + ' + 1' * DEEP}",        # a yaql expression
    f"- Return: f({nested_list(DEEP)})",       # a yaql list literal
], ids=["yaml-flow-list", "yaql-sum", "yaql-list"])
def test_validate_reports_what_run_rejects(tmp_path: Path, body: str) -> None:
    package = write_package(tmp_path, "t.deep", {"A": class_text("t.deep", "A", f"""
        Methods:
          run:
            Body:
              {body}
        """)})
    where = f"{package / 'Classes' / 'A.yaml'}:"
    validated = finishes_cleanly("validate", str(package))
    ran = finishes_cleanly("run", "-l", str(tmp_path), "t.deep.A.run")
    problem = validated.splitlines()[0]
    assert problem.startswith(where) and "nest" in problem and "deeper than" in problem
    assert ran.splitlines() == [f"error: {problem}"]


@pytest.mark.parametrize("levels", [8, 9])
def test_an_alias_bomb_in_a_manifest_is_refused(tmp_path: Path, levels: int) -> None:
    package = write_package(tmp_path, "t.bomb", manifest=alias_bomb(levels))
    out = finishes_cleanly("validate", str(package), limit=5)
    problem = out.splitlines()[0]
    # Line 8 holds l5, the first level past a million nodes.
    assert problem.startswith(f"{package / 'manifest.yaml'}:8:")
    assert problem.endswith(f": YAML aliases expand to more than {MAX_NODES} nodes")


@pytest.mark.parametrize("depth", [DEEP, 2 * DEEP])
def test_a_deep_flow_list_with_a_str_tag_is_refused_fast(tmp_path: Path, depth: int) -> None:
    manifest = f"Format: 1.4\nFullName: t.tag\nName: !!str x\nTags: {nested_list(depth)}\n"
    package = write_package(tmp_path, "t.tag", manifest=manifest)
    out = finishes_cleanly("validate", str(package), limit=5)
    # The manifest's mapping is the first level: the 200th "[" (after "Tags: ") is too deep.
    assert out.splitlines()[0] == (f"{package / 'manifest.yaml'}:4:{6 + MAX_DEPTH}: "
                                   f"YAML nested deeper than {MAX_DEPTH} levels")


def test_a_deep_model_is_a_clean_error(resources: Path, tmp_path: Path) -> None:
    model = tmp_path / "model.json"
    model.write_text('{"?": {"type": "t.res.Reader", "id": "1"}, "x": '
                     + nested_list(DEEP) + "}")
    out = finishes_cleanly("run", "-l", str(resources), "t.res.Reader.json",
                           "--model", str(model))
    assert out == f"error: {model}: JSON nested deeper than {MAX_DEPTH} levels\n"


def test_a_deep_model_for_deploy_is_a_clean_error(tmp_path: Path) -> None:
    model = tmp_path / "model.json"
    model.write_text(nested_list(DEEP))
    out = finishes_cleanly("deploy", str(model), "--state", str(tmp_path / "state.json"))
    assert out == f"error: model {model}: JSON nested deeper than {MAX_DEPTH} levels\n"


def test_recursive_aliases_are_refused() -> None:
    with pytest.raises(LoadError, match=r"m.yaml:1:11: alias \*a refers to a collection "
                                        r"holding it"):
        load_plain("a: &a [1, *a]\n", "m.yaml")


def test_str_tags_keep_the_c_loader_and_their_meaning() -> None:
    doc = load_plain("a: !!str $x\nb: [!!str 1, 2]\n", "m.yaml")
    assert doc == {"a": "$x", "b": ["1", 2]}
    from murano_engine.dsl.expressions import try_parse
    from murano_engine.dsl.yaml_loader import load_documents
    (doc,) = load_documents("a: !!str $x\nb: $x\n", "C.yaml", try_parse)
    assert doc["a"] == "$x" and isinstance(doc["b"], Expression)


def test_json_depth_ignores_brackets_in_strings_and_bounds_real_nesting() -> None:
    assert load_json(json.dumps({"s": "[" * DEEP}), "f.json") == {"s": "[" * DEEP}
    assert load_json(nested_list(MAX_DEPTH), "f.json") is not None
    with pytest.raises(LoadError, match=f"f.json: JSON nested deeper than {MAX_DEPTH}"):
        load_json(nested_list(MAX_DEPTH + 1), "f.json")
    with pytest.raises(LoadError, match="f.json:1:3: malformed JSON"):
        load_json(b"[1", "f.json")


def test_expressions_nest_no_deeper_than_the_limit() -> None:
    assert parse("1" + " + 1" * 150).source.startswith("1 + 1")
    with pytest.raises(LoadError, match="nests deeper than"):
        parse("-" * 1000 + "1")
