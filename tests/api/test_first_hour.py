"""The API ready to try: where its database goes, what it says about auth, how errors read."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from werkzeug.test import Client

from murano_engine import worker
from murano_engine.api import auth, server
from murano_engine.api.app import Api
from murano_engine.api.auth import Context
from murano_engine.api.config import Settings, load_settings
from murano_engine.api.errors import ApiError

REPO = Path(__file__).resolve().parents[2]
SAMPLE_TOKENS = REPO / "murano_engine" / "api" / "tokens.yaml.sample"


def test_the_default_database_is_outside_the_source_tree(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for config in (None, REPO / "murano_engine" / "api" / "murano-api.conf.sample"):
        url = load_settings(config).database
        assert url == f"sqlite:///{tmp_path}/.local/state/murano-engine/murano-api.sqlite"
    assert (tmp_path / ".local" / "state" / "murano-engine").is_dir()


def test_no_auth_is_a_loud_warning_and_a_missing_token_file_an_error(tmp_path, caplog):
    settings = Settings(database=f"sqlite:///{tmp_path / 'api.sqlite'}")
    with caplog.at_level(logging.WARNING):
        _, dispatcher = server.build(settings)
        dispatcher.close()
    assert "NO AUTHENTICATION IS CONFIGURED" in caplog.text
    settings.token_file = tmp_path / "tokens.yaml"
    with pytest.raises(SystemExit, match=r"token_file .*tokens\.yaml does not exist"):
        server.build(settings)


def test_the_sample_tokens_file_has_an_admin_and_a_user():
    tokens = auth.TokenFile(SAMPLE_TOKENS).tokens
    assert tokens["admin-token"].is_admin and not tokens["demo-token"].is_admin
    assert {c.project_id for c in tokens.values()} == {"demo"}


def test_errors_read_as_plain_text_without_html_entities():
    app = Api(Settings(), None, None, lambda _environ: Context("p", "u", [], "t"))
    app.on_list_envs = lambda *_: (_ for _ in ()).throw(
        ApiError("package 'x' isn't there", status=404))
    response = Client(app).get("/v1/environments", headers={"Accept": "*/*"})
    assert response.status_code == 404
    assert response.headers["Content-Type"].startswith("text/plain")
    assert "package 'x' isn't there" in response.get_data(as_text=True)


def test_a_model_path_may_start_with_a_slash():
    app = Api(Settings(), None, None, lambda _environ: Context("p", "u", [], "t"))
    seen = []
    app.on_get_model = lambda request, ctx, env_id, path="": (
        seen.append((env_id, path)) or Api.on_openapi(app, request, ctx))
    for url in ("/v1/environments/e1/model//services/0", "/v1/environments/e1/model/services/0"):
        assert Client(app).get(url).status_code == 200
    assert seen == [("e1", "services/0")] * 2


def test_the_worker_names_what_a_task_did():
    assert worker.describe_action({"action": None}) == "delete"
    assert worker.describe_action({"action": {"method": "deploy"}}) == "deploy"
    assert worker.describe_action({"action": {"method": "scaleTo", "object_id": "o1"}}) == \
        "action scaleTo on o1"
