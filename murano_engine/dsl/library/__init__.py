"""Murano's additions to yaql, as data: function tables by domain.

Each module holds the functions of one domain and a ``FUNCTIONS`` table
(name -> :class:`~murano_engine.dsl.runtime.FunctionSpec`); contract
functions (``$.string()``, ``$.class(T)`` ...) are in :mod:`.contracts`.
:func:`functions` and :func:`contract_functions` give fresh merged tables for
a :class:`~murano_engine.dsl.runtime.Runtime`.
"""

from __future__ import annotations

from murano_engine.dsl.library import (
    bounded,
    contracts,
    data,
    objects,
    regexes,
    system,
    text,
)

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from murano_engine.dsl.runtime import ContractFunction, FunctionSpec

_DOMAINS = (objects, data, text, system, bounded, regexes)


def functions() -> dict[str, FunctionSpec]:
    """Every Murano function, by name."""
    table: dict[str, FunctionSpec] = {}
    for domain in _DOMAINS:
        table.update(domain.FUNCTIONS)
    return table


def contract_functions() -> dict[str, ContractFunction]:
    """Every contract function, by name."""
    return dict(contracts.FUNCTIONS)
