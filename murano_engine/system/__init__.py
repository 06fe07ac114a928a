"""Python halves of the core library's classes (``io.murano.*``).

Importing this package registers every native class with
:mod:`murano_engine.dsl.natives`.
"""

from murano_engine.system import (  # noqa: F401
    agent,
    core,
    gc,
    heat_stack,
    instance_notifier,
    logger,
    net_explorer,
    resources,
    status_reporter,
    test_fixture,
)
