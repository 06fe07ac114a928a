"""The side-by-side workloads that have no command of their own, through this engine.

``benchmarks/murano_side_by_side.py`` runs this file in a process of its own
for each timed run, as it runs ``side_by_side/murano_driver.py`` for the
original Murano; the other workloads go through ``murano-engine run`` and
``murano-test-runner``. Modes:

* ``load``: find every package under the ``-l`` folders and load each of their
  classes (parse, build, compile); print how many loaded and which did not;
* ``model``: deserialize an environment model and serialize it back, as every
  deployment does; print the length of the JSON written.
"""

from __future__ import annotations

import json
import os
import sys

USAGE = "usage: engine_driver.py {load,model} [-l FOLDER]... [MODEL_JSON]"


def package_folders(folders: list[str]) -> list[str]:
    """Every folder with a ``manifest.yaml`` under ``folders`` (not looking inside one)."""
    found = []
    for folder in folders:
        for path, dirs, files in os.walk(folder):
            if "manifest.yaml" in files:
                found.append(path)
                dirs[:] = []
            dirs.sort()
    return found


def load(folders: list[str]) -> None:
    from murano_engine.dsl.packages import PackageLoader
    from murano_engine.engine.interpreter import build_interpreter
    loader = PackageLoader(package_folders(folders), build_interpreter())
    loaded, failed = 0, []
    for versions in loader.packages.values():
        for package in versions:
            for name in package.class_files:
                try:
                    package.load_class(name)
                    loaded += 1
                except Exception:  # noqa: BLE001 - a broken class is counted, as validation does
                    failed.append(name)
    print(json.dumps({"loaded": loaded, "failed": sorted(failed),
                      "problems": len(loader.problems)}))


def model(folders: list[str], path: str) -> None:
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


def main(argv: list[str]) -> None:
    # Read by hand: argparse (with shutil, gettext ...) would add some 10 ms to a
    # workload of 60, which the engine's own commands do not pay for it.
    folders, rest = [], []
    args = iter(argv)
    for arg in args:
        if arg == "-l":
            folders.append(next(args, None) or sys.exit(USAGE))
        else:
            rest.append(arg)
    if rest[:1] == ["load"] and len(rest) == 1:
        load(folders)
    elif rest[:1] == ["model"] and len(rest) == 2:
        model(folders, rest[1])
    else:
        sys.exit(USAGE)


if __name__ == "__main__":
    main(sys.argv[1:])
