"""HelloWeb at 10, 50, 100 and 200 servers on this one machine (issue 47).

Each size is deployed and destroyed as a user does it (``murano-engine deploy``
then ``destroy``, each a process of its own, a private state file and local-cloud
folder, as ``helloweb_bench.py``), with every isolation feature on (namespaces,
control groups, disks, per-server broker users, signed plans) and the project's
server quota lifted (``MURANO_QUOTAS_SERVERS=-1``; ``murano-engine deploy`` is
project ``local``, 20 servers by default). Every server's service is asked for
its greeting; after the destroy nothing of the run may be left (namespaces,
control groups, mounts, loop devices, broker users).

Figures: deploy and destroy wall time, deploy cost per server, and the host
memory an idle server costs: the PSS (``/proc/PID/smaps_rollup``) of every process
in its network namespace, summed, once the deploy ended. Targets (issue 47): at
200 servers deploy under 30 s and destroy under 8 s; the cost per server at 200
within 1.2 times that at 50; an idle server at most 20 MB.

``--profile`` runs each command under ``wall_profile.py`` and keeps its report
(where the wall time went) beside the figures, in ``--keep``.

    python benchmarks/scale_bench.py [--sizes 10 50 100 200] [--profile --keep DIR]

A run of all four sizes takes about a minute and a half (three runs in ``make bench``).
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import figures
import helloweb_bench as helloweb

from murano_engine.clouds.local import netns

REPO = Path(__file__).resolve().parent.parent
ENGINE = [str(Path(sys.executable).with_name("murano-engine"))]
PROFILED = [sys.executable, str(REPO / "benchmarks" / "wall_profile.py")]
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
#: issue 47's targets, for the largest size
DEPLOY_TARGET, DESTROY_TARGET, PER_SERVER_RATIO, IDLE_MB = 30.0, 8.0, 1.2, 20.0


def _pss_kib(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def idle_server_mb(server_ids: list[str]) -> float:
    """The mean PSS (MB) of every process in each server's namespace."""
    total = 0
    for server_id in server_ids:
        total += sum(_pss_kib(pid) for pid in netns.pids(netns.server_namespace(server_id)))
    return total / 1024 / max(1, len(server_ids))


def _command(what: list[str], profile: Path | None) -> list[str]:
    return [*PROFILED, str(profile), "--", *what] if profile else [*ENGINE, *what]


def one(servers: int, env: dict[str, str], keep: Path | None) -> dict[str, float]:
    """Deploy then destroy ``servers`` servers; the figures of the run."""
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as tmp:
        model, path, state, cloud, run_env = helloweb.private_run(Path(tmp), servers, env)
        environment = model["?"]["id"]
        stamp = time.strftime("%H%M%S")
        profile = (lambda kind: keep / f"{servers}-{stamp}-{kind}.txt") if keep else \
            (lambda kind: None)
        ids: list[str] = []
        try:
            host_before = figures.host_cpu()
            deploy, engine_cpu, output = helloweb._run(_command(
                ["deploy", str(path), "-l", "dsl_packages", "--state", str(state)],
                profile("deploy")), run_env)
            host_cpu = figures.host_cpu() - host_before
            if f"is deployed ({servers} units)" not in output:
                raise SystemExit(f"the deploy of {servers} servers did not say so:\n"
                                 f"{output[-3000:]}")
            server_ids = [f.name for f in (cloud / "servers").iterdir()]
            memory = idle_server_mb(server_ids)
            ids = helloweb._check_answers(cloud, servers, model["applications"][0]["port"])
        finally:
            destroy, _, _ = helloweb._run(_command(["destroy", "--state", str(state)],
                                                   profile("destroy")), run_env)
        left = helloweb._leftovers(cloud, ids, environment)
        if left:
            raise SystemExit(f"the destroy of {servers} servers left {len(left)} thing(s): "
                             f"{', '.join(left[:10])}")
        print(f"  {servers} servers: deploy {deploy:.2f} s ({helloweb._phases(output)}), "
              f"{1000 * deploy / servers:.0f} ms per server; destroy {destroy:.2f} s; idle "
              f"server {memory:.1f} MB (PSS); deploy CPU {host_cpu:.1f} s on the host "
              f"({1000 * host_cpu / servers:.0f} ms per server), {engine_cpu:.1f} s of it the "
              f"engine's", flush=True)
        return {"deploy": deploy, "destroy": destroy, "memory": memory}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 100, 200])
    parser.add_argument("--profile", action="store_true",
                        help="run each command under wall_profile.py")
    parser.add_argument("--keep", type=Path, default=None,
                        help="folder for the profiles (with --profile)")
    options = parser.parse_args()
    from murano_engine.clouds.local.sandbox import missing_for_namespaces
    missing = missing_for_namespaces()
    if missing:
        print(f"skipped: this host lacks {', '.join(missing)}")
        return 0
    keep = None
    if options.profile:
        keep = options.keep or Path(tempfile.mkdtemp(prefix="scale-profiles-"))
        keep.mkdir(parents=True, exist_ok=True)
        print(f"profiles in {keep}")
    for package in ("murano_engine", "murano_agent", "murano_common"):
        compileall.compile_dir(REPO / package, quiet=1)  # as pip install does
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    sizes = sorted(options.sizes)
    figures.method(f"HelloWeb (m1.small servers, every isolation feature on) through "
                   f"`murano-engine deploy` then `destroy`, each a process of its own; "
                   f"{RUNS} runs of {', '.join(map(str, sizes))} servers; wall time per "
                   f"command; idle server: PSS of its namespace's processes after the deploy; "
                   f"every server's greeting checked; nothing of a run left after its "
                   f"destroy")
    samples: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
    for _ in range(RUNS):
        for size in sizes:
            samples[size].append(one(size, env, keep))
    largest, reference = sizes[-1], (50 if 50 in sizes else sizes[0])
    for size in sizes:
        deploy = statistics.median(r["deploy"] for r in samples[size])
        destroy = statistics.median(r["destroy"] for r in samples[size])
        print(f"  {size} servers (medians): deploy {deploy:.2f} s, destroy {destroy:.2f} s, "
              f"per server {1000 * deploy / size:.0f} ms", flush=True)
    figures.figure(f"deploy: {largest} servers", [r["deploy"] for r in samples[largest]], "s",
                   DEPLOY_TARGET)
    figures.figure(f"destroy: {largest} servers", [r["destroy"] for r in samples[largest]], "s",
                   DESTROY_TARGET)
    if reference != largest:
        ratios = [(big["deploy"] / largest) / (small["deploy"] / reference)
                  for small, big in zip(samples[reference], samples[largest], strict=True)]
        figures.figure(f"deploy cost per server, {largest} over {reference}", ratios, "x",
                       PER_SERVER_RATIO)
    figures.figure(f"an idle server's memory ({largest} servers)",
                   [r["memory"] for r in samples[largest]], "MB", IDLE_MB)
    figures.finish()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
