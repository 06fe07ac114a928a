"""io.murano.system.Resources: files from a package's ``Resources/`` folder."""

from __future__ import annotations

import functools
from typing import Any

from murano_engine.dsl import document_cache, values
from murano_engine.dsl.json_loader import load_json
from murano_engine.dsl.natives import NativeCall, native_class, static
from murano_engine.dsl.yaml_loader import load_plain


def _read(call: NativeCall, name: str, owner: Any) -> tuple[bytes, str]:
    """A resource's bytes and how to name it in errors (its file)."""
    if owner is not None and hasattr(owner, "murano_class"):
        package = owner.murano_class.package
    else:
        caller = call.caller_class()
        package = caller.package if caller is not None else call.frame.murano_class.package
    try:
        return (package.read_resource(str(name)),
                package.source.display(f"Resources/{name}"))
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"resource {name!r} not found in package {package.name}: {exc}") from None
    except OSError as exc:
        raise OSError(f"resource {name!r} of package {package.name} cannot be read: "
                      f"{exc}") from None


@native_class("io.murano.system.Resources")
class Resources:
    def __init__(self, call: NativeCall) -> None:
        # The package of the code that made this object: Agent.call reads
        # execution-plan scripts from it.
        caller = call.caller_class()
        self.package = caller.package if caller is not None else None

    @static
    def string(call: NativeCall, name: str, owner: Any = None, binary: bool = False) -> Any:
        data, _ = _read(call, name, owner)
        return data if binary else data.decode("utf-8")

    @static
    def json(call: NativeCall, name: str, owner: Any = None) -> Any:
        return _parsed(load_json, *_read(call, name, owner))

    @static
    def yaml(call: NativeCall, name: str, owner: Any = None) -> Any:
        return _parsed(_load_yaml, *_read(call, name, owner))


def _load_yaml(data: bytes, where: str) -> Any:
    """A YAML resource parsed, from the document cache when an earlier process parsed the
    same bytes (a warm run then imports no YAML parser)."""
    return document_cache.cached("resource", data, where, lambda: load_plain(data, where))


#: resources larger than this are parsed at each read, not kept
_KEPT_BYTES = 256 * 1024


def _parsed(parse: Any, data: bytes, where: str) -> Any:
    """``data`` (shown as ``where``) parsed and frozen: a deployment reads the same
    execution-plan template for each of its servers, and a frozen value can be shared."""
    if len(data) > _KEPT_BYTES:
        return values.freeze(parse(data, where))
    return _parsed_kept(parse, data, where)


@functools.lru_cache(maxsize=64)
def _parsed_kept(parse: Any, data: bytes, where: str) -> Any:
    return values.freeze(parse(data, where))
