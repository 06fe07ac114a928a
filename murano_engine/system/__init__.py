"""Python halves of the core library's classes (``io.murano.*``).

:func:`register` adds every one of them to a native-class registry; importing
this package registers nothing.
"""

from __future__ import annotations

from murano_engine.dsl.natives import NativeRegistry
from murano_engine.system import (
    agent,
    core,
    gc,
    heat_stack,
    identity,
    instance_notifier,
    logger,
    metadef_browser,
    mistral,
    net_explorer,
    resources,
    status_reporter,
    test_fixture,
)

NATIVE_CLASSES: tuple[type, ...] = (
    agent.AgentListener, agent.Agent,
    core.ObjectNatives, core.ExceptionNatives, core.StackTraceNatives,
    gc.GarbageCollector,
    heat_stack.HeatStack,
    identity.Project, identity.User,
    instance_notifier.InstanceNotifier,
    logger.Logger,
    metadef_browser.MetadefBrowser,
    mistral.MistralClient,
    net_explorer.NetworkExplorer,
    resources.Resources,
    status_reporter.StatusReporter,
    test_fixture.TestFixture,
)


def register(registry: NativeRegistry) -> None:
    """Add the core library's native classes to ``registry``."""
    for py_class in NATIVE_CLASSES:
        registry.add(py_class)
