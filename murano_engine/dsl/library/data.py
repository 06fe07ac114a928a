"""Functions on plain data: ``pselect``, ``bind``, ``patch``, ``firstOrDefault``."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from yaql.language.utils import FrozenDict

from murano_engine.dsl import concurrency, values
from murano_engine.dsl.budget import budget_of
from murano_engine.dsl.contexts import DslContext
from murano_engine.dsl.runtime import FunctionSpec

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def pselect(ctx: Any, collection: Any, args: list, kwargs: dict) -> Any:
    items = values.freeze(collection)
    selector = args[0] if args else kwargs["selector"]
    budget = budget_of(ctx)
    if budget is not None:
        budget.spend(len(items))

    def run(item: Any) -> Any:
        if budget is not None and budget.left <= 0:  # spent while the branch waited to start
            budget.checkpoint()
        child = DslContext(ctx)
        child["$"] = item
        return selector(child)

    return tuple(concurrency.run_all([functools.partial(run, i) for i in items]))


_MACRO = re.compile(r"\{(\w+)\}")


def bind(ctx: Any, template: Any, mappings: Any) -> Any:
    """Replace ``$name`` strings (keys too) by ``mappings[name]``, where the name is the
    whole rest of the string (``$value of d``); in ``$a-{b}`` only ``{b}`` is replaced,
    in place."""
    def substitute(text: str) -> Any:
        macro = text[1:]
        if _MACRO.search(macro):
            return _MACRO.sub(lambda m: str(mappings.get(m.group(1))), macro)
        if macro not in mappings:
            raise KeyError(macro)
        return mappings[macro]

    def walk(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$"):
            return substitute(value)
        if isinstance(value, Mapping):
            return FrozenDict({walk(k): walk(v) for k, v in value.items()})
        if isinstance(value, (list, tuple)):
            return tuple(walk(v) for v in value)
        return value
    return walk(template)


def patch(ctx: Any, obj: Any, patches: Any) -> Any:
    import jsonpatch
    try:
        return values.freeze(jsonpatch.apply_patch(values.thaw(obj), values.thaw(patches)))
    except jsonpatch.JsonPointerException:
        return obj


def first_or_default(ctx: Any, collection: Any, default: Any = None) -> Any:
    """Formats 1.0 and 1.1."""
    for item in collection:
        return item
    return default


FUNCTIONS = {
    "pselect": FunctionSpec(pselect, raw=True),
    "bind": FunctionSpec(bind),
    "patch": FunctionSpec(patch),
    "firstOrDefault": FunctionSpec(first_or_default),
}
