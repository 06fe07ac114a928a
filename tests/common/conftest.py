import sys
from pathlib import Path

# agent_harness (the broker's URL and checks) lives with the agent's tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "agent"))
