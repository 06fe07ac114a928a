"""Keystone and Heat from PyPI in a virtualenv of their own, built once per machine.

The virtualenv lives in ``~/.cache/murano-engine/openstack/<key>`` (or
``$MURANO_OPENSTACK_CACHE/<key>``), where the key names the Python version and
the pinned packages: another pin builds another one. It is built in its
place and marked complete last, so a half-built one is never used (the next
build starts it again); a lock keeps two builders from racing.
``python -m tests.openstack.venv`` builds it (``.ci/run`` does, before the tests,
and then sets ``MURANO_OPENSTACK_BUILD=never`` so that the tests never build it
again after a failed build: they skip with its reason, kept beside the virtualenv).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

PINS = ("keystone==30.0.0", "openstack-heat==27.0.1", "uWSGI==2.0.31",
        "psycopg2-binary==2.9.13")
PIP_TIMEOUT = 1200


class Unavailable(RuntimeError):
    """The OpenStack virtualenv cannot be had on this machine (the reason says why)."""


def cache_root() -> Path:
    configured = os.environ.get("MURANO_OPENSTACK_CACHE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "murano-engine" / "openstack"


def venv_path() -> Path:
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    key = hashlib.sha256(" ".join((version, *PINS)).encode()).hexdigest()[:12]
    return cache_root() / f"py{version}-{key}"


def _usable(venv: Path) -> bool:
    return (venv / ".complete").is_file()


def _failure(venv: Path) -> Path:
    return venv.with_name(venv.name + ".failed")


def ensure_venv(log=print) -> Path:
    """The virtualenv's path, built first when this machine has none (unless
    ``MURANO_OPENSTACK_BUILD=never``)."""
    venv = venv_path()
    if _usable(venv):
        return venv
    if os.environ.get("MURANO_OPENSTACK_BUILD") == "never":
        failed = _failure(venv)
        why = failed.read_text().strip() if failed.is_file() else "it was not built"
        raise Unavailable(f"{venv} is missing ({why}); build it with "
                          "python -m tests.openstack.venv")
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / ".build-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _usable(venv):
            return venv
        shutil.rmtree(venv, ignore_errors=True)  # a build that stopped half-way
        started = time.monotonic()
        log(f"building the OpenStack virtualenv {venv} ({', '.join(PINS)})")
        try:
            _run([sys.executable, "-m", "venv", str(venv)], "python -m venv")
            _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                  "--disable-pip-version-check", "--progress-bar", "off", *PINS],
                 "pip install")
        except Unavailable as error:
            _failure(venv).write_text(f"{error}\n")
            raise
        (venv / ".complete").write_text(" ".join(PINS) + "\n")
        _failure(venv).unlink(missing_ok=True)
        log(f"built in {time.monotonic() - started:.0f}s")
    return venv


def _run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"{what} took over {PIP_TIMEOUT}s") from None
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise Unavailable(f"{what} failed with exit code {done.returncode}:\n{tail}")


if __name__ == "__main__":
    try:
        print(ensure_venv())
    except Unavailable as error:
        print(f"the OpenStack virtualenv is unavailable: {error}", file=sys.stderr)
        sys.exit(1)
