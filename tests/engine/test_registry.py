"""The local cloud's register of environments and the journal's whole writes, in-process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from murano_engine.clouds.local.registry import EnvironmentBusy, Holding, Registry, new_record
from murano_engine.engine.journal import EmptyJournal, FileJournal, Journal

REPO = Path(__file__).resolve().parents[2]


def test_what_a_run_makes_is_recorded_before_it_is_made(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "environments")
    holding = Holding(registry, new_record("env", tmp_path / "state.json"))
    journal = Journal()
    journal.announce = holding.announce
    seen = []

    def made() -> str:
        seen.append(registry.read("env"))
        return "done"

    journal.effect("stack.push", "murano-env-x", dict, lambda _: made())
    journal.value("broker.identity", "eenv-h1", made)
    journal.effect("agent.call", "eenv-h1", lambda: {"id": "p", "results": "-r-eenv"},
                   lambda _: made())
    assert seen[0]["stacks"] == ["murano-env-x"]
    assert seen[1]["identities"] == ["eenv-h1"] and seen[1]["queues"] == ["eenv-h1"]
    assert seen[2]["queues"] == ["-r-eenv", "eenv-h1"]
    assert json.loads(registry.record_path("env").read_text())["state_file"] == \
        str((tmp_path / "state.json").resolve())


def test_servers_announced_side_by_side_share_writes_each_on_disk_before_it_goes_on(
        tmp_path: Path) -> None:
    """Every server of an environment announces its broker identity at about the same
    moment: one write (and sync) covers those that came while another was under way,
    and none goes on before a record naming it is on disk."""
    import threading
    import time

    registry = Registry(tmp_path / "environments")
    holding = Holding(registry, new_record("env", tmp_path / "state.json"))
    writes = []
    real_write = registry.write

    def slow_write(record):  # noqa: ANN001, ANN202 - a slow disk
        time.sleep(0.02)
        real_write(record)
        writes.append(len(record["identities"]))

    registry.write = slow_write  # type: ignore[method-assign]
    missing = []

    def server(n: int) -> None:
        holding.announce("broker.identity", f"eenv-h{n}")
        if f"eenv-h{n}" not in registry.read("env")["identities"]:
            missing.append(n)

    threads = [threading.Thread(target=server, args=(n,)) for n in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert missing == []
    assert sorted(registry.read("env")["identities"]) == sorted(f"eenv-h{n}" for n in range(30))
    assert len(writes) < 15, writes  # 30 one by one without sharing


_HOLD = """
import sys, time
from pathlib import Path
from murano_engine.clouds.local.registry import Registry
with Registry(Path(sys.argv[1])).locked("env"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_second_holder_of_an_environment_is_refused_naming_the_first(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(tmp_path)], cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(EnvironmentBusy, match=f"pid {holder.pid}"):
            with Registry(tmp_path).locked("env"):
                pass
        assert Registry(tmp_path).busy("env") == str(holder.pid)
    finally:
        holder.kill()
        holder.wait()
    with Registry(tmp_path).locked("env"):  # a killed holder let it go
        pass


def test_a_journal_whose_header_was_torn_opens_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    FileJournal.create(path, {"command": "destroy", "model": "x" * 5000}).close()
    whole = path.read_bytes()
    path.write_bytes(whole[:4000])  # the header cut short, with no newline
    with pytest.raises(EmptyJournal):
        FileJournal.open(path)


_FULL = """
import resource, signal, sys
from murano_engine.engine.journal import FileJournal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (2000, resource.RLIM_INFINITY))
try:
    FileJournal.create(sys.argv[1], {"command": "destroy", "model": "x" * 5000})
except OSError as exc:
    print(exc)
"""


def test_a_journal_that_cannot_be_written_whole_is_not_made(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    done = subprocess.run([sys.executable, "-c", _FULL, str(path)], cwd=REPO, check=True,
                          capture_output=True, text=True, timeout=60)
    assert " bytes were written" in done.stdout, done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []
