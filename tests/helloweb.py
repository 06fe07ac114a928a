"""The HelloWeb example model (``examples/hello-web.json``), for tests and benchmarks."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

MODEL = Path(__file__).resolve().parents[1] / "examples" / "hello-web.json"


def hello_web(servers: int) -> dict:
    """hello-web.json with ``servers`` servers and object ids of its own."""
    text = MODEL.read_text()
    for old in sorted(set(re.findall(r'"id": "([0-9a-f]{32})"', text))):
        text = text.replace(old, uuid.uuid4().hex)
    model = json.loads(text)
    model["applications"][0]["servers"]["numItems"] = servers
    return model
