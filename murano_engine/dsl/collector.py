"""Garbage collection: find unreachable objects and destroy them in order.

Roots are the model roots, static property values and the data of running
frames. Destruction first tells subscribers (owners before children), then
runs each object's ``.destroy`` methods, children before owners and
publishers before subscribers. Errors in handlers are logged and muted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from murano_engine.dsl import concurrency
from murano_engine.dsl.objects import MuranoObject, real_object

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    from murano_engine.dsl.executor import Executor


def collect(executor: Executor) -> list[MuranoObject]:
    """Destroy every object nothing reachable refers to; returns them."""
    reachable = _mark(executor)
    doomed = [obj for obj in executor.objects.values()
              if id(obj) not in reachable and not obj.destroyed]
    destroy(executor, doomed)
    return doomed


def is_doomed(executor: Executor, obj: MuranoObject) -> bool:
    return id(obj) in executor.doomed


def _mark(executor: Executor) -> set[int]:
    marked: set[int] = set()
    stack: list[MuranoObject] = []

    def push(value: Any) -> None:
        for obj in _objects_in(value):
            if id(obj) not in marked:
                marked.add(id(obj))
                stack.append(obj)

    for root in executor.roots:
        push(root)
    push(list(executor.statics.values()))
    for frame in list(executor.active_frames):
        push(frame.this)
        push(list(frame.context._data.values()))
    while stack:
        obj = stack.pop()
        push(list(obj.props.values()))
        push(list(obj.private.values()))
        if obj.owner is not None:
            push(obj.owner)
        push([subscriber for subscriber, _ in obj.dependencies])
    return marked


def _objects_in(value: Any) -> Iterator[MuranoObject]:
    obj = real_object(value)
    if obj is not None:
        yield obj
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _objects_in(key)
            yield from _objects_in(item)
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in value:
            yield from _objects_in(item)


def _depth(obj: MuranoObject) -> int:
    depth = 0
    while obj.owner is not None:
        obj = obj.owner
        depth += 1
    return depth


def destroy(executor: Executor, doomed: list[MuranoObject]) -> None:
    """Run destruction handlers and ``.destroy`` for ``doomed`` objects."""
    if not doomed:
        return
    executor.doomed = {id(o) for o in doomed}
    try:
        for obj in sorted(doomed, key=_depth):
            for subscriber, handler in list(obj.dependencies):
                if handler and not subscriber.destroyed:
                    _muted(executor, subscriber, handler, [obj])
        order = _destruction_order(doomed)
        for obj in order:
            for cls in reversed(obj.murano_class.init_order()):
                method = cls.methods.get(".destroy")
                if method is not None:
                    _muted_method(executor, obj, method)
        # Marked only when every .destroy has run, so an owner's .destroy can
        # still use its (already cleaned up) children.
        for obj in order:
            obj.destroyed = True
            obj.attributes.clear()
            executor.objects.pop(obj.id, None)
    finally:
        executor.doomed = set()


def _destruction_order(doomed: list[MuranoObject]) -> list[MuranoObject]:
    """Children before owners, publishers before subscribers."""
    members = {id(o): o for o in doomed}
    after: dict[int, set[int]] = {id(o): set() for o in doomed}
    for obj in doomed:
        if obj.owner is not None and id(obj.owner) in members:
            after[id(obj.owner)].add(id(obj))
        for subscriber, _ in obj.dependencies:
            if id(subscriber) in members:
                after[id(subscriber)].add(id(obj))
    order: list[MuranoObject] = []
    done: set[int] = set()
    visiting: set[int] = set()

    def visit(key: int) -> None:
        if key in done or key in visiting:
            return
        visiting.add(key)
        for first in sorted(after[key], key=lambda k: doomed.index(members[k])):
            visit(first)
        visiting.discard(key)
        done.add(key)
        order.append(members[key])

    for obj in doomed:
        visit(id(obj))
    return order


def _muted(executor: Executor, obj: MuranoObject, name: str, args: list) -> None:
    try:
        executor.call(obj, name, args)
    except concurrency.BranchStop:
        pass  # a plan's stop (concurrency.BranchStop) ends this handler alone
    except Exception as exc:  # noqa: BLE001 - destruction errors are logged, never raised
        _log_failure("destruction handler %s of %r failed", name, obj)
        executor.destruction_failures.append(f"destruction handler {name} of {obj!r}: {exc}")


def _muted_method(executor: Executor, obj: MuranoObject, method: Any) -> None:
    try:
        executor.invoke(method, obj, [], {}, None)
    except concurrency.BranchStop:
        pass  # a plan's stop (concurrency.BranchStop) ends this handler alone
    except Exception as exc:  # noqa: BLE001 - destruction errors are logged, never raised
        _log_failure("%s.destroy of %r failed", method.declaring_class.name, obj)
        executor.destruction_failures.append(
            f"{method.declaring_class.name}.destroy of {obj!r}: {exc}")


def _log_failure(message: str, *args: Any) -> None:
    """Log the exception being handled, in a line; its Python traceback only at debug
    level (logging is imported here: loading a class with a native half imports this
    module, and should not import logging)."""
    import logging
    import sys
    log = logging.getLogger(__name__)
    log.error(f"{message}: %s", *args, sys.exc_info()[1])
    log.debug("the Python traceback of that failure", exc_info=True)
