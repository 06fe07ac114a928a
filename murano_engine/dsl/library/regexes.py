"""Regular expressions with a time limit: yaql's ``regex`` functions, bounded.

yaql runs patterns with Python's ``re``, which nothing can interrupt: one
pattern with catastrophic backtracking would hang the engine. These functions
take their place (Murano's functions come before yaql's): ``regex()`` compiles
with the ``regex`` package, and ``matches``, ``search``, ``searchAll``,
``split``, ``replace`` and ``replaceBy`` on such a pattern (or ``matches`` with a
pattern string) run within :func:`~murano_engine.dsl.budget.regex_timeout`.
Calls that involve no pattern (``'a,b'.split(',')``, ``'ab'.replace('a', 'b')``)
go to yaql's string functions as before.
"""

from __future__ import annotations

from murano_engine.dsl.budget import Regex, bounded_replacement, compile_regex, run_regex
from murano_engine.dsl.contexts import DslContext, frame_of
from murano_engine.dsl.queries import replace_text
from murano_engine.dsl.runtime import FunctionSpec

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def _values(ctx: Any, args: list, kwargs: dict) -> tuple[list, dict]:
    return [a(ctx) for a in args], {k: v(ctx) for k, v in kwargs.items()}


def _yaql(ctx: Any, name: str, receiver: Any, args: list, kwargs: dict) -> Any:
    """The call as yaql's own function (no pattern involved)."""
    return _yaql_of_values(ctx, name, receiver, *_values(ctx, args, kwargs))


def _yaql_of_values(ctx: Any, name: str, receiver: Any, values: list, named: dict) -> Any:
    """:func:`_yaql` of arguments already evaluated."""
    return ctx(name, frame_of(ctx).executor.runtime.engine, receiver, ctx)(*values, **named)


def _pattern_and_text(receiver: Any, first: Any) -> tuple[Regex, str] | None:
    """(pattern, text) for ``pattern.f(text)`` and ``text.f(pattern)``; None otherwise."""
    if isinstance(receiver, Regex) and isinstance(first, str):
        return receiver, first
    if isinstance(first, Regex) and isinstance(receiver, str):
        return first, receiver
    return None


def _publish(ctx: Any, match: Any) -> DslContext:
    """A child context with the match as ``$`` (``$1``) and its groups as ``$2``..."""
    child = DslContext(ctx)
    child["$1"] = {"value": match.group(), "start": match.start(), "end": match.end()}
    for index in range(1, len(match.groups()) + 1):
        child[f"${index + 1}"] = {"value": match.group(index), "start": match.start(index),
                                  "end": match.end(index)}
    return child


def regex(ctx: Any, pattern: str, ignoreCase: bool = False,  # noqa: N803 - yaql's names
          multiLine: bool = False, dotAll: bool = False) -> Regex:  # noqa: N803
    import regex as engine
    flags = (engine.IGNORECASE if ignoreCase else 0) | (engine.MULTILINE if multiLine else 0) \
        | (engine.DOTALL if dotAll else 0)
    return compile_regex(str(pattern), flags)


def matches(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    first = args[0](ctx) if args else None
    found = _pattern_and_text(receiver, first)
    if found is None and isinstance(receiver, str) and isinstance(first, str):
        found = regex(ctx, first), receiver
    if found is None:
        return _yaql(ctx, "matches", receiver, args, kwargs)
    pattern, text = found
    return run_regex(ctx, pattern, lambda p, t: p.search(text, timeout=t) is not None)


def search(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    found = _pattern_and_text(receiver, args[0](ctx) if args else None)
    if found is None:
        return _yaql(ctx, "search", receiver, args, kwargs)
    pattern, text = found
    selector = args[1] if len(args) > 1 else kwargs.get("selector")
    match = run_regex(ctx, pattern, lambda p, t: p.search(text, timeout=t))
    if match is None:
        return None
    return match.group() if selector is None else selector(_publish(ctx, match))


def search_all(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    found = _pattern_and_text(receiver, args[0](ctx) if args else None)
    if found is None:
        return _yaql(ctx, "searchAll", receiver, args, kwargs)
    pattern, text = found
    selector = args[1] if len(args) > 1 else kwargs.get("selector")

    def every(p: Any, t: float) -> list:
        return list(p.finditer(text, timeout=t))

    matches_ = run_regex(ctx, pattern, every)
    return tuple(m.group() if selector is None else selector(_publish(ctx, m))
                 for m in matches_)


def split(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    found = _pattern_and_text(receiver, args[0](ctx) if args else None)
    if found is None:
        return _yaql(ctx, "split", receiver, args, kwargs)
    pattern, text = found
    rest, named = _values(ctx, args[1:], kwargs)
    most = int(rest[0] if rest else named.get("maxSplit", 0))
    return tuple(run_regex(ctx, pattern, lambda p, t: p.split(text, most, timeout=t)))


def _replace(ctx: Any, receiver: Any, args: list, kwargs: dict, name: str,
             by: bool) -> Any:
    first = args[0](ctx) if args else None
    found = _pattern_and_text(receiver, first)
    if found is None:  # text replaced in text: each argument evaluated once
        rest, named = _values(ctx, args[1:], kwargs)
        given = [first, *rest] if args else rest
        if name == "replace" and not named:
            return replace_text(ctx, receiver, given)
        return _yaql_of_values(ctx, name, receiver, given, named)
    pattern, text = found
    repl = args[1] if len(args) > 1 else kwargs["repl"]
    count_arg = args[2] if len(args) > 2 else kwargs.get("count")
    count = int(count_arg(ctx)) if count_arg is not None else 0
    if by:
        def make(match: Any) -> str:
            return str(repl(_publish(ctx, match)))
    else:
        template = str(repl(ctx))

        def make(match: Any) -> str:
            return match.expand(template)
    replacement = bounded_replacement(text, make)
    return run_regex(ctx, pattern, lambda p, t: p.sub(replacement, text, count, timeout=t))


def replace(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    return _replace(ctx, receiver, args, kwargs, "replace", by=False)


def replace_by(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    return _replace(ctx, receiver, args, kwargs, "replaceBy", by=True)


FUNCTIONS = {
    "regex": FunctionSpec(regex, method=False),
    "matches": FunctionSpec(matches, raw=True),
    "search": FunctionSpec(search, raw=True),
    "searchAll": FunctionSpec(search_all, raw=True),
    "split": FunctionSpec(split, raw=True),
    "replace": FunctionSpec(replace, raw=True),
    "replaceBy": FunctionSpec(replace_by, raw=True),
}
