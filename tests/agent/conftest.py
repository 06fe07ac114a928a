import pytest
from agent_harness import client, make_agent, make_client, reader  # noqa: F401 - shared


@pytest.fixture(autouse=True)
def no_sandbox_left_behind():
    """Agent tests make no local-cloud servers; the host-wide check of the suite's
    conftest would only see (and delete) those of suites running beside them."""
    yield
