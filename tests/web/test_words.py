"""How the pages word codes and time stamps."""

from __future__ import annotations

from murano_engine.web import words


def test_statuses_and_states_are_words_with_a_tone():
    assert words.status("delete failure") == {"code": "delete failure",
                                              "words": "Deletion failed", "tone": "failed"}
    assert words.status("deploy failure")["tone"] == "failed"
    assert words.state("completed_w_errors") == {"code": "completed_w_errors",
                                                 "words": "Finished with errors",
                                                 "tone": "failed"}
    assert words.state("success")["words"] == "Succeeded"
    assert all("_" not in w for w, _ in [*words.STATUSES.values(), *words.STATES.values()])


def test_times_are_readable():
    assert words.when("2026-12-01T20:26:19.123456") == "2026-12-01 20:26:19 UTC"
    assert words.when(None) == ""
    assert words.report_time({"timestamp": "1764620779.5"}) == "20:26:19"
    assert words.report_time({"timestamp": None, "created": "2026-12-01T20:26:19.5"}) \
        == "20:26:19"
    assert words.report_time({"timestamp": "", "created": None}) == ""


def test_what_an_action_returned():
    done = {"action": {"method": "greet"}, "result": {"isException": False, "result": "hi"}}
    assert words.returned(done) == 'returned "hi"'
    assert words.returned({**done, "action": {"method": "deploy"}}) == ""
    assert words.returned({**done, "action": None}) == ""  # a deletion
    assert words.returned({**done, "result": {"isException": True, "result": {}}}) == ""
    assert words.returned({**done, "result": {"isException": False, "result": None}}) == ""
