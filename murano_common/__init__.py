"""Pieces shared by the engine and the guest agent.

Neither ``murano_engine`` nor ``murano_agent`` imports the other; what both
need (the broker protocol, the configuration loader) lives here, so the agent
can be packaged and installed alone in a guest with this package beside it.
"""
