"""Service definitions for running the agent: systemd unit, Windows service and installer."""
