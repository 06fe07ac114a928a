import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "agent"))

from agent_harness import client, make_agent, make_client, reader  # noqa: E402, F401 - shared
