"""Plan signing: the engine's signatures, and a keyed agent refusing what it must refuse."""

from __future__ import annotations

import json
import uuid

import pytest
from agent_harness import publish_raw
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from murano_agent.security import Rejected, SignatureVerifier
from murano_engine.messaging.signing import PlanSigner


@pytest.fixture(scope="module")
def private_pem() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def test_signature_covers_queue_and_body(private_pem):
    signer = PlanSigner(private_pem)
    public = signer.public_key_pem()
    assert public.startswith("-----BEGIN RSA PUBLIC KEY-----")
    verifier = SignatureVerifier(public, "e1-h1")
    body = '{"Body": "return 1"}'
    signature = signer.sign("e1-h1", body)
    verifier.verify(body.encode(), signature)
    with pytest.raises(Rejected, match="tampered"):
        verifier.verify(body.replace("1", "2").encode(), signature)
    with pytest.raises(Rejected, match="tampered"):
        verifier.verify(body.encode(), signer.sign("e1-h2", body))
    with pytest.raises(Rejected, match="not signed"):
        verifier.verify(body.encode(), None)


def test_public_key_lines_carry_the_prefix(private_pem):
    lines = PlanSigner(private_pem).public_key_pem("\t").splitlines()
    assert len(lines) > 3 and all(line.startswith("\t") for line in lines)
    assert lines[0] == "\t-----BEGIN RSA PUBLIC KEY-----"


def test_bad_signing_key_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="not an unencrypted PEM private key"):
        PlanSigner("not a key")


def signed_raw(signer: PlanSigner, queue: str, plan: dict) -> tuple[str, bytes]:
    body = json.dumps(plan)
    return body, signer.sign(queue, body)


def test_keyed_agent_runs_signed_plans_and_rejects_the_rest(
    make_client, make_agent, private_pem, tmp_path
):
    engine = make_client(signing_key_pem=private_pem)
    agent = make_agent(engine, extra="engine_key = " + engine.signing_key("\t"))
    counter = tmp_path / "count"

    def plan(marker: str) -> dict:
        script = f"#!/bin/sh\necho {marker} >> {counter}\necho {marker}\n"
        return engine.build_plan(
            {
                "FormatVersion": "2.0.0",
                "Body": "return run().stdout",
                "Scripts": {"run": {"Type": "Application", "EntryPoint": "run.sh"}},
            },
            lambda name: script.encode(),
        )

    first = plan("signed")
    assert engine.call(agent.queue, first, 10) == "signed"

    make_client().send(agent.queue, plan("unsigned"))  # an engine without the key
    signer = PlanSigner(private_pem)
    good = plan("tampered")
    body, signature = signed_raw(signer, agent.queue, good)
    publish_raw(agent.queue, body.replace("tampered", "tamperee"), "m-t", {"signature": signature})
    body, signature = signed_raw(signer, "e-other-h-other", dict(good, ID=uuid.uuid4().hex))
    publish_raw(agent.queue, body, "m-q", {"signature": signature})
    body, signature = signed_raw(signer, agent.queue, dict(plan("stale"), Stamp=first["Stamp"]))
    publish_raw(agent.queue, body, "m-s", {"signature": signature})
    # the plan that already ran, asked for again with a new stamp (as the engine does after
    # a broker cut): answered from storage, not run again
    body, signature = signed_raw(signer, agent.queue, dict(first, Stamp=plan("x")["Stamp"]))
    publish_raw(agent.queue, body, first["ID"], {"signature": signature})

    assert engine.call(agent.queue, plan("last"), 10) == "last"  # processed after all above
    assert counter.read_text().split() == ["signed", "last"]
    log = agent.log()
    assert "message is not signed" in log
    assert log.count("signature does not match the message") == 2
    assert f"replayed or stale plan: Stamp {first['Stamp']} <=" in log
    assert f"plan {first['ID']} already ran; answering with its stored result" in log


def test_keyed_agent_answers_every_refusal_and_never_replays_a_result(
    make_agent, private_pem, reader, tmp_path
):
    """Unsigned, foreign-signed, unstamped and replayed plans each get an error result
    naming the reason and run nothing; a replayed old message does not make the agent
    send its stored result again, and the reply-to property of a message (not covered
    by the signature) never redirects a result."""
    from agent_harness import ResultReader

    signer = PlanSigner(private_pem)
    agent = make_agent(extra="engine_key = " + signer.public_key_pem("\t")
                       + "\nenable_dynamic_result_queue = true", result_queue=reader.queue)
    agent.wait_log("connected; consuming")
    counter = tmp_path / "count"
    foreign = PlanSigner(rsa.generate_private_key(public_exponent=65537, key_size=2048)
                         .private_bytes(serialization.Encoding.PEM,
                                        serialization.PrivateFormat.TraditionalOpenSSL,
                                        serialization.NoEncryption()))
    stamps = iter(range(10**12, 10**12 + 100))

    def plan(marker: str, stamp: bool = True) -> dict:
        script = f"#!/bin/sh\necho {marker} >> {counter}\necho {marker}\n"
        wire = {"FormatVersion": "2.0.0", "ID": marker, "Body": "return run().stdout",
                "Scripts": {"run": {"Type": "Application", "EntryPoint": "run.sh"}},
                "Files": {"run.sh": {"Name": "run.sh", "BodyType": "Text", "Body": script}}}
        if stamp:
            wire["Stamp"] = next(stamps)
        return wire

    def send(wire: dict, key: PlanSigner | None = signer, **extra) -> str:
        body = json.dumps(wire)
        headers = {"signature": key.sign(agent.queue, body)} if key else {}
        publish_raw(agent.queue, body, wire["ID"], headers, **extra)
        return body

    def answer(plan_id: str) -> dict:
        message_id, result = reader.get(20)
        assert message_id == plan_id == result["SourceID"], result
        return result

    send(plan("unsigned"), key=None)
    assert "message is not signed" in answer("unsigned")["Body"]["Message"]
    send(plan("foreign"), key=foreign)
    assert "signature does not match" in answer("foreign")["Body"]["Message"]
    send(plan("unstamped", stamp=False))
    assert "plan has no Stamp" in answer("unstamped")["Body"]["Message"]

    first = plan("first")
    body = send(first)
    ran = answer("first")
    assert ran["ErrorCode"] == 0 and ran["Body"].strip() == "first", ran
    publish_raw(agent.queue, body, "first", {"signature": signer.sign(agent.queue, body)})
    replayed = answer("first")
    assert replayed["ErrorCode"] == 2, replayed
    assert f"replayed or stale plan: Stamp {first['Stamp']}" in replayed["Body"]["Message"]

    # The engine asking again (same ID, a new stamp): the stored result, not the refusal,
    # and to the configured queue, whatever reply-to the message carries.
    elsewhere = ResultReader()
    try:
        send(dict(first, Stamp=next(stamps)), reply_to=elsewhere.queue)
        assert answer("first")["Body"] == ran["Body"]
        assert elsewhere.empty(1.0)
    finally:
        elsewhere.close()
    assert counter.read_text().split() == ["first"]
    assert reader.empty(0.5)


def test_engine_key_is_made_once_private_and_shared_by_racing_engines(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from murano_engine.messaging.signing import engine_key

    path = tmp_path / "state" / "signing-key.pem"
    with ThreadPoolExecutor(4) as pool:
        keys = set(pool.map(lambda _: engine_key(path), range(4)))
    assert len(keys) == 1 and path.read_bytes() in keys
    assert path.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["signing-key.pem"]
    assert engine_key(path) == path.read_bytes()
    PlanSigner(path.read_bytes())  # a usable RSA key


def test_unsigned_mode_engine_has_no_key_and_keyless_agents_run_its_plans(
    make_client, make_agent, tmp_path
):
    """[engine] sign_plans = false (Murano's unsigned mode): no key is made, agents are
    given none, and an agent without engine_key runs the unsigned plans."""
    from murano_engine.engine.config import load_config
    from murano_engine.engine.services import close_services, engine_services, signing_key_file

    ini = tmp_path / "engine.ini"
    ini.write_text(f"[engine]\nsign_plans = false\n[local_cloud]\nstate_dir = {tmp_path}/c\n"
                   "[rabbitmq]\nurl = memory://\n")
    config = load_config(ini, {})
    assert signing_key_file(config) is None
    services = engine_services(config)
    try:
        assert services["agents"].signing_key("\t") == ""
    finally:
        close_services(services)
    assert not (tmp_path / "c" / "signing-key.pem").exists()

    engine = make_client()
    agent = make_agent(engine)  # no engine_key
    plan = engine.build_plan({"FormatVersion": "2.0.0", "Body": "return 6 * 7", "Scripts": {}},
                             lambda n: b"")
    assert engine.call(agent.queue, plan, 10) == 42
