"""The embedded local cloud: the default when no OpenStack is configured.

It takes the HOT templates the core library emits and makes their resources on
this machine: networks, subnets and ports get addresses allocated from the
subnets' CIDRs, volumes are folders, and a server is a sandbox (:mod:`.sandbox`:
its own namespaces, its ports' addresses on its networks' bridges) running the
real guest agent as a process of its own, configured from the agent config
found in its user data (the rule is in
:mod:`murano_engine.clouds.local.userdata`: a MIME part named ``*agent.conf``,
a cloud-config ``write_files`` entry whose path ends with ``agent.conf``, or a
boot script's ``AgentConfigBase64='...'``, as Linux instances have).
A Linux image runs shell plans for real; a Windows image (name containing
"win", or ``os_type: windows`` metadata) needs a PowerShell executable on the
host and fails clearly without one.

``[local_cloud]`` settings (declared in :mod:`murano_engine.engine.config`): ``state_dir``,
``broker_url`` (the broker the agents use instead of the one their config names),
``isolation`` (``namespaces`` or ``none``), ``powershell``, ``floating_cidr``,
``parallel``, ``stack_timeout``, ``poll_interval``.
"""

__all__ = ["LocalCloud"]


def __getattr__(name: str) -> type:
    # LocalCloud imported when asked for: a command that reads only the register of
    # environments (a plan, which makes nothing) does not import the cloud's modules.
    if name == "LocalCloud":
        from murano_engine.clouds.local.cloud import LocalCloud
        return LocalCloud
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
