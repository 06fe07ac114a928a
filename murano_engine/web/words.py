"""How the pages word what the API gives as codes: environment statuses, deployment
states, and time stamps (all in UTC)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup, escape

#: environment status -> (words, tone); the tone is the CSS class that colours it
STATUSES = {"ready": ("Ready", "ok"), "pending": ("Changes not deployed yet", "busy"),
            "deploying": ("Deploying", "busy"), "deleting": ("Deleting", "busy"),
            "deploy failure": ("Deployment failed", "failed"),
            "delete failure": ("Deletion failed", "failed")}
#: deployment state -> (words, tone)
STATES = {"success": ("Succeeded", "ok"), "running": ("Running", "busy"),
          "running_w_warnings": ("Running, with warnings", "warning"),
          "running_w_errors": ("Running, with errors", "failed"),
          "completed_w_warnings": ("Finished with warnings", "warning"),
          "completed_w_errors": ("Finished with errors", "failed")}


def status(code: Any) -> dict[str, str]:
    """``{code, words, tone}`` of an environment status."""
    words, tone = STATUSES.get(str(code), (str(code), "busy"))
    return {"code": str(code), "words": words, "tone": tone}


def state(code: Any) -> dict[str, str]:
    """``{code, words, tone}`` of a deployment state."""
    words, tone = STATES.get(str(code), (str(code), "busy"))
    return {"code": str(code), "words": words, "tone": tone}


def when(stamp: Any) -> str:
    """An ISO time stamp the API gives (UTC) as ``YYYY-MM-DD HH:MM:SS UTC``."""
    if not stamp:
        return ""
    try:
        moment = datetime.fromisoformat(str(stamp))
    except ValueError:
        return str(stamp)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def report_time(report: Mapping[str, Any]) -> str:
    """When a report was made, ``HH:MM:SS`` UTC: the engine's time stamp (seconds since
    the epoch), else when the API stored it (the API's own reports have no stamp)."""
    try:
        moment = datetime.fromtimestamp(float(report.get("timestamp") or ""), UTC)
    except (TypeError, ValueError):
        try:
            moment = datetime.fromisoformat(str(report.get("created")))
        except ValueError:
            return ""
    return moment.strftime("%H:%M:%S")


def returned(deployment: Mapping[str, Any]) -> str:
    """What an action other than deploy returned (JSON), as the deployments list shows
    it; nothing for deployments, failures and actions that return nothing."""
    action = deployment.get("action") or {}
    result = deployment.get("result") or {}
    if action.get("method") in (None, "deploy") or result.get("isException") \
            or result.get("result") is None:
        return ""
    return "returned " + json.dumps(result["result"])


def dotted(name: Any) -> Markup:
    """A dotted name (a package's or a class's full name) that a line may break after
    each dot, and nowhere inside a part (``<wbr>`` after each dot, the parts escaped)."""
    return Markup(".<wbr>").join(escape(part) for part in str(name).split("."))
