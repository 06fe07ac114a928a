"""yaql's grammar with Murano's operators: ``>`` as ``is`` (type check) and ``:``
(binary and prefix, for namespaced names such as ``res:Instance``)."""

from __future__ import annotations

from yaql.language import factory as yaql_factory


def murano_factory() -> yaql_factory.YaqlFactory:
    """yaql's grammar with Murano's operators."""
    factory = yaql_factory.YaqlFactory()
    factory.insert_operator(">", True, "is",
                            yaql_factory.OperatorType.BINARY_LEFT_ASSOCIATIVE, False)
    factory.insert_operator(None, False, ":",
                            yaql_factory.OperatorType.BINARY_LEFT_ASSOCIATIVE, True)
    factory.insert_operator(None, False, ":",
                            yaql_factory.OperatorType.PREFIX_UNARY, False)
    return factory
