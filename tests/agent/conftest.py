from agent_harness import client, make_agent, make_client, reader  # noqa: F401 - shared

