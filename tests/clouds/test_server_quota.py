"""The local cloud's servers quota: every stack of the folder counts, whichever engine
process holds it; a push past the quota is refused whole, and one that adds no server
passes even past it (a quota lowered under what is held)."""

from __future__ import annotations

import pytest

from murano_engine.clouds.base import push_stack, remove_stack
from murano_engine.clouds.local.quota import QuotaExceeded


def _stack(environment, servers: tuple[str, ...], number: int) -> dict:
    return environment(servers, environment_id=str(number), cidr=f"10.0.{number}.0/24")


def _servers(cloud) -> int:
    root = cloud.state_dir / "servers"
    return sum(1 for _ in root.iterdir()) if root.exists() else 0


def test_a_push_past_the_servers_quota_is_refused_whole(make_cloud, agents, environment):
    first = make_cloud(server_quota=3)
    push_stack(first, "one", _stack(environment, ("vm1", "vm2"), 1))
    second = make_cloud(server_quota=3)  # another process: "one" is not its own
    with pytest.raises(QuotaExceeded, match=r"the servers quota is 3, and stack two would "
                                            r"take the project's servers to 4 \(2 in the "
                                            r"stack, 2 in its other stacks\)"):
        second.create("two", _stack(environment, ("vm1", "vm2"), 2))
    assert second.peek("two") is None and _servers(second) == 2 and len(agents) == 2
    with pytest.raises(QuotaExceeded, match="take the project's servers to 4"):
        first.update("one", _stack(environment, ("vm1", "vm2", "vm3", "vm4"), 1))
    assert first.get("one").status == "CREATE_COMPLETE"  # as it was
    push_stack(second, "two", _stack(environment, ("vm1",), 2))  # the last place
    assert _servers(second) == 3

    lowered = make_cloud(server_quota=1)
    second.close()
    # past the quota already: what adds no server passes, what adds one does not
    push_stack(lowered, "two", _stack(environment, ("vm9",), 2))
    with pytest.raises(QuotaExceeded, match="the servers quota is 1"):
        lowered.update("two", _stack(environment, ("vm1", "vm2"), 2))
    remove_stack(first, "one")
    push_stack(lowered, "three", _stack(environment, (), 3))  # no server: a network
    assert _servers(lowered) == 1


def test_without_a_quota_nothing_is_counted(make_cloud, environment):
    cloud = make_cloud()
    assert cloud.server_quota == -1
    push_stack(cloud, "one", _stack(environment, ("vm1", "vm2", "vm3"), 1))
    assert _servers(cloud) == 3
