"""yaql functions that could allocate without bound, shadowed by checked ones:
``pow`` (the result's size) and ``range`` (lazy, and no more than the iterator limit
drawn from it: :class:`~murano_engine.dsl.budget.LongRange`)."""

from __future__ import annotations

import operator

from murano_engine.dsl.budget import bounded_range, check_power
from murano_engine.dsl.runtime import FunctionSpec

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def pow_(ctx: Any, base: Any, exponent: Any, modulo: Any = None) -> Any:
    if modulo is not None:
        return pow(base, exponent, modulo)
    check_power(base, exponent)
    return base ** exponent


def range_(ctx: Any, start: Any, stop: Any = None, step: Any = 1) -> Any:
    if stop is None:
        start, stop = 0, start
    return bounded_range(operator.index(start), operator.index(stop), operator.index(step))


FUNCTIONS = {
    "pow": FunctionSpec(pow_),
    "range": FunctionSpec(range_),
}
