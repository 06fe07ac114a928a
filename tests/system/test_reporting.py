"""StatusReporter and InstanceNotifier: their reports reach the reporter service."""

from __future__ import annotations

import logging


def test_reports_and_errors_reach_the_reporter(make_object):
    sent = []
    services = {"reporter": sent.append, "environment_id": "env-7"}
    executor, reporter = make_object("io.murano.system.StatusReporter", services)
    target = executor.new_object(executor.loader.find_class("io.murano.Object"), object_id="o1")

    executor.call(reporter, "report", (target, "Creating the VM"))
    executor.call(reporter, "reportError", (target, "It broke"))
    executor.call(reporter, "report_error", (None, "Env level"))

    assert [(r["id"], r["environment_id"], r["text"], r["level"]) for r in sent] == [
        ("o1", "env-7", "Creating the VM", "info"),
        ("o1", "env-7", "It broke", "error"),
        ("env-7", "env-7", "Env level", "error"),
    ]
    assert all(isinstance(r["timestamp"], float) for r in sent)


def test_reports_without_a_task_use_the_environment_object_id(make_object):
    sent = []
    executor, _ = make_object("io.murano.Object", {"reporter": sent.append})
    environment = executor.new_object(executor.loader.find_class("io.murano.Object"),
                                      object_id="env-obj")
    reporter = executor.new_object(executor.loader.find_class("io.murano.system.StatusReporter"),
                                   native_args={"environment": environment})
    executor.call(reporter, "report", ("x1", "hello"))
    assert (sent[0]["id"], sent[0]["environment_id"]) == ("x1", "env-obj")


def test_reporting_without_a_reporter_is_silent(make_object, caplog, capfd):
    """No reporter service: reports go nowhere - no error, no output, no log record."""
    executor, reporter = make_object("io.murano.system.StatusReporter", {})
    target = executor.new_object(executor.loader.find_class("io.murano.Object"), object_id="o1")
    with caplog.at_level(logging.DEBUG):
        executor.call(reporter, "report", (None, "nobody listens"))
        executor.call(reporter, "reportError", (target, "nobody listens"))
        executor.call(reporter, "report_error", (target, "nobody listens"))
    assert [r.getMessage() for r in caplog.records if "nobody listens" in r.getMessage()] == []
    assert capfd.readouterr() == ("", "")  # murano-engine's stdout carries its JSON result


def test_instance_notifier_reports_tracking(make_object):
    sent = []
    services = {"reporter": sent.append, "environment_id": "e"}
    executor, notifier = make_object("io.murano.system.InstanceNotifier", services)
    app = executor.new_object(executor.loader.find_class("io.murano.Object"), object_id="a1")

    executor.call(notifier, "trackApplication", (app, "WordPress", 2))
    executor.call(notifier, "untrackApplication", (app,))
    executor.call(notifier, "trackCloudInstance", (app,))
    executor.call(notifier, "untrackCloudInstance", (app,))

    assert [r["text"] for r in sent] == [
        "WordPress is deployed (2 units)", "io.murano.Object a1 is removed",
        "io.murano.Object a1 is running", "io.murano.Object a1 is released"]
    assert {r["id"] for r in sent} == {"a1"}


def test_one_unit_is_reported_in_the_singular(make_object):
    sent = []
    executor, notifier = make_object("io.murano.system.InstanceNotifier",
                                     {"reporter": sent.append, "environment_id": "e"})
    app = executor.new_object(executor.loader.find_class("io.murano.Object"), object_id="a1")
    for units in (1, 0, 3):
        executor.call(notifier, "trackApplication", (app, "Hello web", units))
    assert [r["text"] for r in sent] == [
        "Hello web is deployed (1 unit)", "Hello web is deployed (0 units)",
        "Hello web is deployed (3 units)"]
