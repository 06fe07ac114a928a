"""The side-by-side workloads that have no command of their own, through this engine.

``benchmarks/murano_side_by_side.py`` runs ``engine_driver.py`` (which runs
this module) in a process of its own for each timed run, as it runs
``side_by_side/murano_driver.py`` for the original Murano; the other
workloads go through ``murano-engine run`` and ``murano-test-runner``. Modes:

* ``load``: find every package under the ``-l`` folders and load each of their
  classes (parse, build, compile); print how many loaded and which did not;
* ``model``: deserialize an environment model and serialize it back, as every
  deployment does; print the length of the JSON written.
"""

from __future__ import annotations

import os

# The engine's package first, as its own commands import it (``murano_engine.cli.main``)
# before the standard library's modules they use: it primes ``re`` with the patterns
# those modules compile (murano_engine.regex_table).
import murano_engine  # noqa: F401


def package_folders(folders: list[str]) -> list[str]:
    """Every folder with a ``manifest.yaml`` under ``folders`` (not looking inside one,
    nor into hidden folders such as ``.git``), by name."""
    found: list[str] = []
    for folder in folders:
        _find_packages(folder, found)
    return found


def _find_packages(folder: str, found: list[str]) -> None:
    with os.scandir(folder) as scan:
        entries = {entry.name: entry for entry in scan}
    manifest = entries.get("manifest.yaml")
    if manifest is not None and manifest.is_file():
        found.append(folder)
        return
    for name in sorted(entries):
        if not name.startswith(".") and entries[name].is_dir(follow_symlinks=False):
            _find_packages(entries[name].path, found)


def load(folders: list[str]) -> None:
    from murano_engine.cli.main import long_lived
    loaded, failed = 0, []
    with long_lived():  # as the engine's commands load packages (validate, run)
        from murano_engine.dsl.packages import PackageLoader
        from murano_engine.engine.interpreter import build_interpreter
        loader = PackageLoader(package_folders(folders), build_interpreter())
        for versions in loader.packages.values():
            for package in versions:
                for name in package.class_files:
                    try:
                        package.load_class(name)
                        loaded += 1
                    except Exception:  # noqa: BLE001 - a broken class is counted, as validation does
                        failed.append(name)
    import json
    print(json.dumps({"loaded": loaded, "failed": sorted(failed),
                      "problems": len(loader.problems)}))


def model(folders: list[str], path: str) -> None:
    import json

    from murano_engine.cli.main import long_lived
    with long_lived():  # as ``murano-engine run`` starts
        from murano_engine.dsl import model as model_loader
        from murano_engine.dsl import serializer
        from murano_engine.dsl.executor import Executor
        from murano_engine.dsl.packages import PackageLoader
        from murano_engine.engine.interpreter import build_interpreter
        loader = PackageLoader(folders, build_interpreter())
    executor = Executor(loader)
    with open(path, encoding="utf-8") as file:
        root = model_loader.load_model(executor, json.load(file))
    print(len(json.dumps(serializer.serialize_model(root))))


def main() -> None:
    # Parsed as the engine's own commands parse theirs (argparse with their formatter,
    # which does not import shutil), and ended as they end (exit_now).
    import argparse

    from murano_engine.cli.main import HelpFormatter, exit_now
    parser = argparse.ArgumentParser(formatter_class=HelpFormatter)
    parser.add_argument("mode", choices=["load", "model"])
    parser.add_argument("-l", dest="folders", action="append", default=[])
    parser.add_argument("target", nargs="?")
    options = parser.parse_intermixed_args()
    if options.mode == "load":
        load(options.folders)
    elif options.target is None:
        parser.error("model needs the model's JSON file")
    else:
        model(options.folders, options.target)
    exit_now(0)

