"""Python halves of the core library's classes (``io.murano.*``).

Importing this package registers every native class with
:mod:`murano_engine.dsl.natives`.
"""

from murano_engine.system import core, gc, logger, resources, test_fixture  # noqa: F401
