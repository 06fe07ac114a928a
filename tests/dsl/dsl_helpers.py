"""Helpers for the interpreter's pytest tests: packages written on the fly."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter

REPO = Path(__file__).resolve().parents[2]


def write_package(root: Path, full_name: str, classes: dict[str, str] | None = None, *,
                  fmt: str = "1.4", version: str | None = None,
                  require: dict[str, str] | None = None, folder: str | None = None,
                  manifest: str | None = None) -> Path:
    """A package folder ``root/folder`` with one ``Classes/<Short>.yaml`` per class.

    ``classes`` maps a short class name to the text of its file; the manifest
    maps ``full_name.Short`` to that file. ``manifest`` replaces the whole
    manifest text.
    """
    path = root / (folder or full_name)
    (path / "Classes").mkdir(parents=True, exist_ok=True)
    for short, text in (classes or {}).items():
        (path / "Classes" / f"{short}.yaml").write_text(textwrap.dedent(text).lstrip())
    if manifest is None:
        lines = [f"Format: {fmt}", "Type: Application", f"FullName: {full_name}",
                 f"Description: test package {full_name}"]
        if version is not None:
            lines.append(f"Version: '{version}'")
        if require:
            lines.append("Require:")
            lines += [f"  {name}: '{spec}'" for name, spec in require.items()]
        lines.append("Classes:" if classes else "Classes: {}")
        lines += [f"  {full_name}.{short}: {short}.yaml" for short in classes or {}]
        manifest = "\n".join(lines) + "\n"
    (path / "manifest.yaml").write_text(textwrap.dedent(manifest))
    return path


def class_text(namespace: str, name: str, body: str, **prefixes: str) -> str:
    """A class file: ``Namespaces`` (``=`` plus ``prefixes``), ``Name`` and a dedented body."""
    extra = "".join(f"  {prefix}: {ns}\n" for prefix, ns in prefixes.items())
    return (f"Namespaces:\n  =: {namespace}\n{extra}Name: {name}\n"
            + textwrap.dedent(body).lstrip())


def run_method(dirs: list[Path], target: str, executor: Executor | None = None,
               **kwargs: Any) -> Any:
    """Run ``Class.method`` in-process, as ``murano-engine run`` does."""
    loader = executor.loader if executor else PackageLoader(dirs, build_interpreter())
    class_name, _, method_name = target.rpartition(".")
    cls = loader.find_class(class_name)
    executor = executor or Executor(loader)
    method = cls.find_method(method_name)
    assert method is not None, target
    receiver = cls.ref if method.is_static else executor.new_object(cls)
    return executor.invoke(method, receiver, [], kwargs, None)


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m murano_engine.cli.main ARGS`` as a subprocess."""
    return subprocess.run([sys.executable, "-m", "murano_engine.cli.main", *args],
                          capture_output=True, text=True, timeout=60, cwd=cwd or REPO)
