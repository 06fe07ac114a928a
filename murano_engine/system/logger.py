"""io.murano.system.Logger: MuranoPL logging through Python's logging."""

from __future__ import annotations

from typing import Any

from murano_engine.dsl.library.text import SafeFormatter
from murano_engine.dsl.natives import NativeCall, method, native_class


def _format(message: Any, args: tuple, kwargs: dict) -> str:
    try:
        return SafeFormatter().vformat(str(message), args, kwargs)
    except (ValueError, KeyError, IndexError):
        return str(message)


@native_class("io.murano.system.Logger")
class Logger:
    def __init__(self, call: NativeCall, loggerName: str | None = None) -> None:  # noqa: N803
        import logging  # here: loading the class (every app's does) should not import it

        self.log = logging.getLogger(f"murano.app.{loggerName or 'default'}")

    @staticmethod
    def _emit(call: NativeCall, level: int, message: Any, args: tuple, kwargs: dict) -> None:
        log = call.native.log
        if log.isEnabledFor(level):
            log.log(level, _format(message, args, kwargs))

    @method
    def exception(call: NativeCall, exc: Any, message: Any, *args: Any, **kwargs: Any) -> None:
        text = _format(message, args, kwargs)
        detail = ""
        if exc is not None and hasattr(exc, "murano_class"):
            detail = f": [{exc.props.get('name')}] {exc.props.get('message')}"
        call.native.log.error("%s%s", text, detail)


def _level_method(level: int) -> object:
    def log(call: NativeCall, message: Any, *args: Any, **kwargs: Any) -> None:
        Logger._emit(call, level, message, args, kwargs)
    return method(log)


# Python's logging levels (logging.DEBUG is 10 ...), and Murano's trace below them.
for _name, _level in (("trace", 5), ("debug", 10), ("info", 20), ("warning", 30),
                      ("error", 40), ("critical", 50)):
    setattr(Logger, _name, _level_method(_level))
