"""What a sandbox's limits (its cgroup and the bounded ``/sandbox`` disk) add to a server's start.

ROUNDS pairs of servers are started through the local cloud's namespace
launcher, one after another: in each pair one without a flavor (today's
sandbox: no cgroup, ``/sandbox`` a plain folder) and one with ``m1.small`` (a
cgroup of its own, ``/sandbox`` a loop-mounted ext4 disk), in alternating
order. Per server: ``start`` (the launcher's own work) and ``ready`` (until the
agent answers a no-op plan over RabbitMQ); the figures are the medians of the
pairs' differences. Each server is removed before the next pair starts. The
disk template for the size is made once before the rounds (its cost is printed
as a figure of its own).

Targets: the limits add under 100 ms to start and to ready.

    python benchmarks/sandbox_limits_bench.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import figures

from murano_engine.clouds.local import disk
from murano_engine.clouds.local.flavors import FLAVORS, Flavor
from murano_engine.clouds.local.netns import Interface
from murano_engine.clouds.local.sandbox import (
    NamespaceLauncher,
    ServerSpec,
    missing_for_namespaces,
)
from murano_engine.messaging import AgentClient

AGENT_INI = "[DEFAULT]\nstorage = /var/murano/plans\n[rabbitmq]\ninput_queue = {queue}\n" \
            "result_routing_key = {results}\n"
FLAVOR = FLAVORS["m1.small"]


def _spec(root: Path, index: int, url: str, results: str, flavor: Flavor | None) -> ServerSpec:
    server_id = str(uuid.uuid4())
    folder = root / server_id
    folder.mkdir(parents=True)
    return ServerSpec(
        server_id=server_id, hostname=f"limits-{index}", folder=folder,
        agent_ini=AGENT_INI.format(queue=f"bench-{server_id}", results=results),
        broker_url=url, flavor=flavor,
        interfaces=[Interface(str(uuid.uuid4()), f"10.9.{index % 250}.2/24",
                              f"fa:16:3e:00:01:{index % 256:02x}")])


def _start(launcher: NamespaceLauncher, client: AgentClient,
           spec: ServerSpec) -> tuple[float, float]:
    """Seconds the launcher took, and until the agent answered; then the server goes."""
    try:
        started = time.perf_counter()
        launcher.start(spec)
        start = time.perf_counter() - started
        if not client.is_ready(f"bench-{spec.server_id}", 60):
            raise SystemExit(f"the agent of {spec.hostname} never answered; "
                             f"see {spec.output_file}")
        return start, time.perf_counter() - started
    finally:
        launcher.remove(spec)


def _template_cost() -> float:
    """Seconds to make the disk template of the flavor's size (from an empty cache)."""
    with tempfile.TemporaryDirectory() as cache:
        real = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = cache
        try:
            started = time.perf_counter()
            disk._template(FLAVOR.disk_mib)
            return time.perf_counter() - started
        finally:
            if real is None:
                del os.environ["XDG_CACHE_HOME"]
            else:
                os.environ["XDG_CACHE_HOME"] = real


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--url", default="amqp://guest:guest@127.0.0.1:5672//")
    options = parser.parse_args()
    missing = missing_for_namespaces()
    if missing:
        print(f"skipped: this host lacks {', '.join(missing)}")
        return 0
    figures.method(f"{options.rounds} pairs of servers through the namespace launcher, one "
                   f"without a flavor and one with {FLAVOR.name} (cgroup + {FLAVOR.disk_mib} "
                   f"MiB loop-mounted ext4 /sandbox), alternating order; figures are medians "
                   f"of the pairs' differences; readiness is a no-op plan over RabbitMQ")
    templates = [_template_cost() for _ in range(3)]
    disk._template(FLAVOR.disk_mib)  # the rounds use the cached template, as servers do
    launcher = NamespaceLauncher()
    client = AgentClient(options.url, region=f"bench-{uuid.uuid4().hex[:6]}")
    added: dict[str, list[float]] = {"start": [], "ready": []}
    limited: dict[str, list[float]] = {"start": [], "ready": []}
    root = Path(tempfile.mkdtemp(prefix="limits-bench-"))
    try:
        for index in range(options.rounds):
            order = (None, FLAVOR) if index % 2 == 0 else (FLAVOR, None)
            times = {flavor: _start(launcher, client, _spec(
                root, 2 * index + n, options.url, client.result_queue, flavor))
                for n, flavor in enumerate(order)}
            for n, name in enumerate(("start", "ready")):
                added[name].append(times[FLAVOR][n] - times[None][n])
                limited[name].append(times[FLAVOR][n])
    finally:
        launcher.close()
        client.close()
        shutil.rmtree(root, ignore_errors=True)
    figures.figure("added to a server's start (launcher's work) by its cgroup and disk",
                   added["start"], "ms", 100, scale=1000)
    figures.figure("added until the agent answers", added["ready"], "ms", 100, scale=1000)
    figures.figure(f"start with limits ({FLAVOR.name}), launcher's work", limited["start"],
                   "ms", 300, scale=1000)
    figures.figure(f"first server of a disk size: making its {FLAVOR.disk_mib} MiB template "
                   f"(once per size and host)", templates, "ms", 1000, scale=1000)
    figures.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
