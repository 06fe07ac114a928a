"""Writes this Python build's table of compiled regular expressions
(:mod:`murano_engine.regex_table`): ``python -m murano_engine.cli.regex_table``,
which ``make install`` runs."""

from __future__ import annotations

import os

from murano_engine import regex_table

_SAMPLE_CLASS = """\
Namespaces: {=: regex.table}
Name: Sample
Properties:
  size: {Contract: $.int().notNull(), Default: 2}
Methods:
  twice:
    Body:
      - Return: $.size * 2
"""


def _engine_work() -> None:
    """What the engine's commands compile: a cold validation of the core library and a
    cold run of a method (the CLI, PyYAML's resolver, yaql's lexer, the interpreter)."""
    import contextlib
    import io
    import tempfile

    from murano_engine.cli.main import main
    from murano_engine.dsl.packages import META_DIR
    saved = os.environ.get("XDG_CACHE_HOME")
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
        os.environ["XDG_CACHE_HOME"] = os.path.join(folder, "cache")
        for name in sorted(os.listdir(META_DIR)):
            main(["validate", os.path.join(META_DIR, name)])
        package = os.path.join(folder, "packages", "regex.table")
        os.makedirs(os.path.join(package, "Classes"))
        with open(os.path.join(package, "manifest.yaml"), "w", encoding="utf-8") as file:
            file.write("Format: 1.4\nType: Library\nFullName: regex.table\n"
                       "Classes: {regex.table.Sample: Sample.yaml}\n")
        with open(os.path.join(package, "Classes", "Sample.yaml"), "w",
                  encoding="utf-8") as file:
            file.write(_SAMPLE_CLASS)
        main(["run", "-l", os.path.dirname(package), "regex.table.Sample.twice"])
    if saved is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = saved


def main() -> None:
    """Write this Python build's table of what the engine's commands compile."""
    table = regex_table.record(_engine_work)
    path = regex_table.table_path()
    regex_table.write(table, path)
    print(f"{len(table)} regular expressions kept in {path}")


if __name__ == "__main__":
    main()
