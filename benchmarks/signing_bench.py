"""What signed plans cost: the engine signing a plan, the agent checking it.

The plan is a deploy plan of the Linux cluster's shape (a 4 KiB shell script,
its file and a body), stamped and serialised as the engine sends it. Signing
is :meth:`PlanSigner.sign` over queue name + body (RSA-2048, PKCS#1 v1.5,
SHA-256), with the JSON encoding the engine does before it; checking is what
the agent does before keeping a plan: the signature
(:class:`murano_agent.security.SignatureVerifier`), the JSON, and the stamp
check (:class:`murano_agent.security.StampGuard`; writing the accepted stamp is
a file write like the plan's own journal line, not measured here). Each run
times ``OPS`` operations in CPU seconds of the process (RSA is all CPU; the
wall clock of a shared 2-core machine adds other people's work); the figure is
per plan. Target: under 1 ms each.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import figures

from murano_agent.security import SignatureVerifier, StampGuard
from murano_engine.messaging.signing import PlanSigner, engine_key

OPS = 200
RUNS = int(os.environ.get("BENCH_RUNS", "3")) * 5
QUEUE = "e0f6b2e4c9a8d4d1f8c2a7e5b3d9c1a00-h0f6b2e4c9a8d4d1f8c2a7e5b3d9c1a02"
SCRIPT = "#!/bin/sh\n" + "echo 'configuring the node' >> /var/log/kv.log\n" * 90


def plan(stamp: int) -> dict:
    return {"FormatVersion": "2.1.0", "Version": "1.0.0", "Name": "Deploy KV node",
            "ID": f"{stamp:032x}", "Stamp": stamp, "ReplyTo": None,
            "Body": "return deploy(args.node).stdout", "Parameters": {"node": "kv-1"},
            "Scripts": {"deploy": {"Type": "Application", "Version": "1.0.0",
                                   "EntryPoint": "deploy.sh", "Files": [],
                                   "Options": {"captureStdout": True}}},
            "Files": {"deploy.sh": {"Name": "deploy.sh", "BodyType": "Text", "Body": SCRIPT}}}


def cpu(func: Callable[[], object]) -> float:
    """CPU seconds of one call of ``func``."""
    started = time.process_time()
    func()
    return time.process_time() - started


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        signer = PlanSigner(engine_key(Path(folder) / "signing-key.pem"))
        verifier = SignatureVerifier(signer.public_key_pem(), QUEUE)
        stamps = StampGuard(Path(folder) / "stamp", durable=True)  # last accepted: 0
        figures.method(f"RSA-2048 PKCS#1 v1.5 SHA-256 over a {len(json.dumps(plan(1)))}-byte "
                       f"plan; {OPS} plans a run, per plan, CPU time")
        counter = iter(range(1, 10**9))
        signed: list[tuple[bytes, bytes]] = []

        def sign() -> None:
            for _ in range(OPS):
                body = json.dumps(plan(next(counter)))
                signed.append((body.encode(), signer.sign(QUEUE, body)))

        def check() -> None:
            for body, signature in signed[:OPS]:
                verifier.verify(body, signature)
                stamps.check(json.loads(body)["Stamp"], required=True)
            del signed[:OPS]

        sign_times, check_times = [], []
        for _ in range(RUNS):
            sign_times.append(cpu(sign))
            check_times.append(cpu(check))
        figures.figure("sign a plan (engine: JSON + signature), CPU", sign_times, "ms", 1.0,
                       scale=1000 / OPS)
        figures.figure("check a plan (agent: signature + JSON + stamp), CPU", check_times,
                       "ms", 1.0, scale=1000 / OPS)
    figures.finish()


if __name__ == "__main__":
    main()
