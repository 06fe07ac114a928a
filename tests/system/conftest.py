"""Fixtures for the system-class tests: an executor over the core library."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from murano_engine.dsl.executor import Executor
from murano_engine.dsl.objects import MuranoObject
from murano_engine.dsl.packages import PackageLoader
from murano_engine.interpreter import build_interpreter


@pytest.fixture(scope="session")
def loader() -> PackageLoader:
    return PackageLoader([], build_interpreter())


@pytest.fixture
def make_object(loader: PackageLoader) -> Callable[..., tuple[Executor, MuranoObject]]:
    """``make_object(class name, services, **constructor args)`` -> (executor, object)."""

    def make(class_name: str, services: dict[str, Any],
             **kwargs: Any) -> tuple[Executor, MuranoObject]:
        executor = Executor(loader, services=services)
        obj = executor.new_object(loader.find_class(class_name), native_args=kwargs)
        return executor, obj

    return make
