"""Python halves of the core library's classes (``io.murano.*``).

:func:`register` adds every one of them to a native-class registry, by where it
is: a module here is imported when its class is first used. Importing this
package registers nothing.
"""

from __future__ import annotations

from murano_engine.dsl.natives import NativeRegistry

#: MuranoPL class -> ``module:class`` of its Python half, imported on first use
NATIVE_CLASSES: dict[str, str] = {
    "io.murano.system.AgentListener": "murano_engine.system.agent:AgentListener",
    "io.murano.system.Agent": "murano_engine.system.agent:Agent",
    "io.murano.Object": "murano_engine.system.core:ObjectNatives",
    "io.murano.Exception": "murano_engine.system.core:ExceptionNatives",
    "io.murano.StackTrace": "murano_engine.system.core:StackTraceNatives",
    "io.murano.system.GC": "murano_engine.system.gc:GarbageCollector",
    "io.murano.system.HeatStack": "murano_engine.system.heat_stack:HeatStack",
    "io.murano.Project": "murano_engine.system.identity:Project",
    "io.murano.User": "murano_engine.system.identity:User",
    "io.murano.system.InstanceNotifier": "murano_engine.system.instance_notifier:InstanceNotifier",
    "io.murano.system.Logger": "murano_engine.system.logger:Logger",
    "io.murano.system.MetadefBrowser": "murano_engine.system.metadef_browser:MetadefBrowser",
    "io.murano.system.MistralClient": "murano_engine.system.mistral:MistralClient",
    "io.murano.system.NetworkExplorer": "murano_engine.system.net_explorer:NetworkExplorer",
    "io.murano.system.Resources": "murano_engine.system.resources:Resources",
    "io.murano.system.StatusReporter": "murano_engine.system.status_reporter:StatusReporter",
    "io.murano.test.TestFixture": "murano_engine.system.test_fixture:TestFixture",
}


def register(registry: NativeRegistry) -> None:
    """Add the core library's native classes to ``registry`` (each imported when its
    MuranoPL class is first used)."""
    for name, where in NATIVE_CLASSES.items():
        registry.add_lazy(name, where)
