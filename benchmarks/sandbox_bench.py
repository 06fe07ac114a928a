"""What a sandboxed local-cloud server costs to start and stop, beside a plain process.

For each isolation (``namespaces``, ``none``) it starts SERVERS agents one after
another through the local cloud's launcher, each on a network of its own, and
measures per server:
* ``start``: the launcher's own work (namespaces, veth pair, relay, spawn);
* ``ready``: from the start until the agent answers a no-op plan over RabbitMQ
  (Python start-up and the broker connection included);
* ``stop``: stopping the agent and removing everything it had.
Then the same servers started side by side (threads) give the wall time for all
(median of RUNS rounds).

Targets (per server, medians): start under 300 ms with namespaces and 50 ms
without; ready under 2 s; stop under 1.5 s; side by side, SERVERS servers
ready within 5 s.

    python benchmarks/sandbox_bench.py [--servers 10] [--url amqp://guest:guest@127.0.0.1:5672//]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import figures

from murano_engine.clouds.local.netns import Interface
from murano_engine.clouds.local.sandbox import (
    ServerSpec,
    make_launcher,
    missing_for_namespaces,
)
from murano_engine.messaging import AgentClient

AGENT_INI = "[DEFAULT]\nstorage = /var/murano/plans\n[rabbitmq]\ninput_queue = {queue}\n" \
            "result_routing_key = {results}\n"


def _specs(root: Path, count: int, url: str, results: str) -> list[ServerSpec]:
    specs = []
    for index in range(count):
        server_id = str(uuid.uuid4())
        folder = root / server_id
        folder.mkdir(parents=True)
        specs.append(ServerSpec(
            server_id=server_id, hostname=f"bench-{index}", folder=folder,
            agent_ini=AGENT_INI.format(queue=f"bench-{server_id}", results=results),
            broker_url=url,
            interfaces=[Interface(str(uuid.uuid4()), f"10.9.{index % 250}.2/24",
                                  f"fa:16:3e:00:00:{index % 256:02x}")]))
    return specs


def _one_by_one(isolation: str, count: int, url: str) -> dict[str, list[float]]:
    launcher = make_launcher(isolation)
    client = AgentClient(url, region=f"bench-{uuid.uuid4().hex[:6]}")
    samples: dict[str, list[float]] = {"start": [], "ready": [], "stop": []}
    with tempfile.TemporaryDirectory() as tmp:
        specs = _specs(Path(tmp), count, url, client.result_queue)
        try:
            for spec in specs:
                started = time.perf_counter()
                launcher.start(spec)
                samples["start"].append(time.perf_counter() - started)
                if not client.is_ready(f"bench-{spec.server_id}", 60):
                    raise SystemExit(f"{isolation}: agent of {spec.hostname} never answered; "
                                     f"see {spec.folder}/agent.out")
                samples["ready"].append(time.perf_counter() - started)
            for spec in specs:
                started = time.perf_counter()
                launcher.stop(spec)
                samples["stop"].append(time.perf_counter() - started)
        finally:
            for spec in specs:
                launcher.stop(spec)
            launcher.close()
            client.close()
    return samples


def _side_by_side(isolation: str, count: int, url: str) -> float:
    launcher = make_launcher(isolation)
    client = AgentClient(url, region=f"bench-{uuid.uuid4().hex[:6]}")
    with tempfile.TemporaryDirectory() as tmp:
        specs = _specs(Path(tmp), count, url, client.result_queue)
        started = time.perf_counter()
        try:
            with ThreadPoolExecutor(count) as pool:
                list(pool.map(launcher.start, specs))
                ready = list(pool.map(
                    lambda s: client.is_ready(f"bench-{s.server_id}", 60), specs))
            elapsed = time.perf_counter() - started
            if not all(ready):
                raise SystemExit(f"{isolation}: not every agent answered")
        finally:
            with ThreadPoolExecutor(count) as pool:
                list(pool.map(launcher.stop, specs))
            launcher.close()
            client.close()
    return elapsed


#: figure -> target in ms, per isolation
TARGETS = {"namespaces": {"start": 300, "ready": 2000, "stop": 1500, "side by side": 5000},
           "none": {"start": 50, "ready": 2000, "stop": 1500, "side by side": 5000}}
WHAT = {"start": "launcher's own work", "ready": "start until the agent answers",
        "stop": "stop and clean up"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3, help="side-by-side rounds")
    parser.add_argument("--url", default="amqp://guest:guest@127.0.0.1:5672//")
    options = parser.parse_args()
    isolations = ["none"]
    missing = missing_for_namespaces()
    if missing:
        print(f"namespaces: skipped, this host lacks {', '.join(missing)}")
    else:
        isolations.insert(0, "namespaces")
    for isolation in isolations:
        figures.method(f"{isolation}: {options.servers} servers through the local cloud's "
                       f"launcher, one after another (median per server), then side by side "
                       f"({options.runs} rounds); readiness is a no-op plan over RabbitMQ")
        samples = _one_by_one(isolation, options.servers, options.url)
        for name, values in samples.items():
            figures.figure(f"{isolation}: {name} ({WHAT[name]})", values, "ms",
                           TARGETS[isolation][name], scale=1000)
        walls = [_side_by_side(isolation, options.servers, options.url)
                 for _ in range(options.runs)]
        figures.figure(f"{isolation}: {options.servers} servers side by side, all ready", walls,
                       "ms", TARGETS[isolation]["side by side"], scale=1000)
    figures.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
