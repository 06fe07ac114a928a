"""The budget of a ui.yaml evaluation: MuranoPL's step, time and memory budget, and
collection and string size limits, for the yaql of forms and Application templates.

An evaluation (checking a wizard page's answers, rendering its fields, turning the
answers into a model) runs inside :func:`spending` a :class:`~murano_engine.dsl.budget.
Budget` made by :class:`FormLimits`; every yaql function call in it (operators and
``$`` included) is one step of that budget. yaql's own limits stop a collection past
:data:`FORM_ITERATOR_LIMIT` items and a value past :data:`FORM_MEMORY_QUOTA` bytes, and
regular expressions run with the ``regex`` package, within :data:`FORM_REGEX_TIMEOUT`
(or what is left of the budget), off the GIL. A spent budget, a limit or a timeout is a
:class:`FormLimitError`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import yaql.legacy as yaql_legacy
from yaql.language import contexts, conventions, specs, utils, yaqltypes
from yaql.language import exceptions as yaql_exceptions

from murano_engine.dsl import budget as dsl_budget
from murano_engine.dsl import errors
from murano_engine.dsl.limits import (
    DEFAULT_FORM_MEMORY_LIMIT,
    DEFAULT_FORM_STEP_LIMIT,
    DEFAULT_FORM_TIME_LIMIT,
)

#: Items a collection made in a form expression may hold.
FORM_ITERATOR_LIMIT = 1000
#: Bytes a value made in a form expression may take.
FORM_MEMORY_QUOTA = 256 * 1024
#: Seconds one regular expression of a form may run. The ``regex`` package counts them
#: in CPU time: on a busy machine the wall-clock wait is longer (4.5 s for 1 s under a
#: load of 15 on 2 cores), hence less than a task's.
FORM_REGEX_TIMEOUT = 0.5

#: the budget the evaluations of this thread (or task) spend, and the event that stops
#: them at their next checkpoint
_current: ContextVar[tuple[dsl_budget.Budget, threading.Event | None] | None] = ContextVar(
    "form_budget", default=None)

#: the errors that mean a limit was met
LIMIT_ERRORS = (errors.BudgetExceededError, errors.RegexTimeoutError,
                errors.ValueLimitExceededError, yaql_exceptions.CollectionTooLargeException,
                yaql_exceptions.MemoryQuotaExceededException, RecursionError, MemoryError)


class FormLimitError(Exception):
    """An evaluation met a limit: its budget, a size limit or a regex timeout (not a
    ValueError: it ends the whole evaluation, not one field's check)."""


@dataclass(frozen=True)
class FormLimits:
    """The budget of one form evaluation: seconds, steps, megabytes (None: no limit)."""

    seconds: float | None = DEFAULT_FORM_TIME_LIMIT
    steps: int | None = DEFAULT_FORM_STEP_LIMIT
    memory_mb: int | None = DEFAULT_FORM_MEMORY_LIMIT

    @classmethod
    def from_config(cls, config: Any) -> FormLimits:
        """``[engine] form_time_limit``, ``form_step_limit``, ``form_memory_limit``
        (0: none)."""
        engine = config["engine"]
        return cls(float(engine["form_time_limit"]) or None,
                   int(engine["form_step_limit"]) or None,
                   int(engine["form_memory_limit"]) or None)

    def budget(self) -> dsl_budget.Budget:
        return dsl_budget.Budget(self.seconds, self.steps, self.memory_mb)


@contextmanager
def spending(budget: dsl_budget.Budget, stop: threading.Event | None = None
             ) -> Iterator[dsl_budget.Budget]:
    """Evaluations inside spend ``budget`` (and end once ``stop`` is set); a limit they
    meet is a FormLimitError."""
    token = _current.set((budget, stop))
    try:
        yield budget
    except LIMIT_ERRORS as exc:
        raise FormLimitError(limit_message(exc)) from None
    finally:
        _current.reset(token)
        budget.release()


def limit_message(exc: BaseException) -> str:
    """What a limit error says, for the user."""
    if isinstance(exc, yaql_exceptions.CollectionTooLargeException):
        return f"a collection has more than {FORM_ITERATOR_LIMIT} items (the form limit)"
    if isinstance(exc, yaql_exceptions.MemoryQuotaExceededException):
        return f"a value is larger than {FORM_MEMORY_QUOTA} bytes (the form limit)"
    if isinstance(exc, RecursionError):
        return "the expressions nest or refer to each other too deeply"
    if isinstance(exc, MemoryError):
        return "the evaluation ran out of memory"
    return str(exc).replace("task's", "form evaluation's")


def step() -> None:
    """Count one step of the budget in force (none: nothing to count)."""
    state = _current.get()
    if state is not None:
        budget, stop = state
        budget.left -= 1
        if budget.left < 0:
            if stop is not None and stop.is_set():
                raise FormLimitError("the server is stopping")
            budget.checkpoint()


def seconds_left() -> float:
    state = _current.get()
    return state[0].seconds_left() if state is not None else float("inf")


class BudgetedContext(contexts.Context):
    """A yaql context whose every function call is a step of the budget in force."""

    def __call__(self, name: str, engine: Any, receiver: Any = utils.NO_VALUE,
                 data_context: Any = None, use_convention: bool = False,
                 function_filter: Any = None) -> Any:
        step()
        return super().__call__(name, engine, receiver, data_context, use_convention,
                                function_filter)


@functools.cache
def engine() -> Any:
    """The yaql engine of forms (legacy mode, as the dashboard), with the form limits."""
    return yaql_legacy.YaqlFactory().create(options={
        "yaql.limitIterators": FORM_ITERATOR_LIMIT,
        "yaql.memoryQuota": FORM_MEMORY_QUOTA,
    })


def create_context() -> Any:
    """A fresh legacy yaql context whose calls spend the budget, with a bounded
    ``range``, ``pow``, integer product and string ``replace``, and timed regexes."""
    context = yaql_legacy.create_context(
        context=BudgetedContext(convention=conventions.CamelCaseConvention()), regex=False)
    context = context.create_child_context()  # a layer whose functions shadow yaql's
    for function in _FUNCTIONS:
        context.register_function(function)
    return context


@specs.name("range")
@specs.extension_method
@specs.parameter("start", int)
@specs.parameter("stop", int, nullable=True)
@specs.parameter("step_by", int, alias="step")
def _range(start: int, stop: int | None = None, step_by: int = 1) -> Iterator[int]:
    """yaql's ``range``, refused past the form's collection limit before it is made."""
    items = range(0, start) if stop is None else range(start, stop, step_by)
    if len(items) > FORM_ITERATOR_LIMIT:
        raise yaql_exceptions.CollectionTooLargeException(FORM_ITERATOR_LIMIT)
    return iter(items)


@specs.name("pow")
@specs.parameter("base", int)
@specs.parameter("exponent", int)
@specs.parameter("modulo", int, nullable=True)
def _pow(base: int, exponent: int, modulo: int | None = None) -> Any:
    """yaql's ``pow`` of integers, refused (as MuranoPL's) before a result past
    :data:`~murano_engine.dsl.budget.MAX_INT_BITS` is computed."""
    if modulo is not None:
        return pow(base, exponent, modulo)
    dsl_budget.check_power(base, exponent)
    return base ** exponent


@specs.name("#operator_*")
@specs.parameter("left", int)
@specs.parameter("right", int)
def _multiply(left: int, right: int) -> int:
    """An integer product, refused before it passes the bits MuranoPL allows."""
    dsl_budget.check_product(left, right)
    return left * right


def _replaced(string: str, old: str, new: str, count: int = -1) -> str:
    """``string.replace(old, new, count)``, refused before its result would pass the
    memory quota (a short string with a long replacement could ask for gigabytes)."""
    dsl_budget.check_replacement(string, old, new, count, FORM_MEMORY_QUOTA)
    return string.replace(old, new, count)


@specs.name("replace")
@specs.method
@specs.parameter("string", yaqltypes.String())
@specs.parameter("old", yaqltypes.String())
@specs.parameter("new", yaqltypes.String())
@specs.parameter("count", int)
def _replace_text(string: str, old: str, new: str, count: int = -1) -> str:
    return _replaced(string, old, new, count)


@specs.name("replace")
@specs.method
@specs.parameter("string", yaqltypes.String())
@specs.parameter("replacements", utils.MappingType)
@specs.parameter("count", int)
@specs.inject("str_func", yaqltypes.Delegate("str"))
def _replace_each(string: str, str_func: Any, replacements: Any, count: int = -1) -> str:
    """yaql's ``replace`` with a mapping of replacements, each one checked."""
    for old, new in replacements.items():
        string = _replaced(string, str_func(old), str_func(new), count)
    return string


# -- regular expressions, timed ---------------------------------------------------------

def _timeout() -> float:
    return min(FORM_REGEX_TIMEOUT, seconds_left())


def _run(pattern: dsl_budget.Regex, run: Any) -> Any:
    """``run(compiled, timeout)`` (the ``regex`` package's call, off the GIL)."""
    timeout = _timeout()
    try:
        return run(pattern.compiled, timeout)
    except TimeoutError:
        raise errors.RegexTimeoutError(
            f"regular expression {pattern.compiled.pattern[:80]!r} ran longer than "
            f"{timeout:g} s") from None


def regex_search(pattern: str | dsl_budget.Regex, text: str) -> Any:
    """``pattern``'s first match in ``text`` (or None), within the regex timeout."""
    compiled = pattern if isinstance(pattern, dsl_budget.Regex) else \
        dsl_budget.compile_regex(pattern)
    return _run(compiled, lambda p, t: p.search(text, timeout=t, concurrent=True))


_PATTERN = yaqltypes.PythonType(dsl_budget.Regex)


@specs.name("regex")
@specs.parameter("pattern", yaqltypes.String())
@specs.parameter("ignore_case", bool)
@specs.parameter("multi_line", bool)
@specs.parameter("dot_all", bool)
def _regex(pattern: str, ignore_case: bool = False, multi_line: bool = False,
           dot_all: bool = False) -> dsl_budget.Regex:
    import regex
    flags = (regex.IGNORECASE if ignore_case else 0) | (regex.MULTILINE if multi_line else 0) \
        | (regex.DOTALL if dot_all else 0)
    return dsl_budget.compile_regex(pattern, flags)


@specs.name("matches")
@specs.method
@specs.parameter("regexp", _PATTERN)
@specs.parameter("string", yaqltypes.String())
def _matches(regexp: dsl_budget.Regex, string: str) -> bool:
    return regex_search(regexp, string) is not None


@specs.name("matches")
@specs.method
@specs.parameter("string", yaqltypes.String())
@specs.parameter("regexp", yaqltypes.String())
def _string_matches(string: str, regexp: str) -> bool:
    return regex_search(regexp, string) is not None


@specs.name("#operator_=~")
@specs.parameter("string", yaqltypes.String())
@specs.parameter("pattern", yaqltypes.AnyOf(yaqltypes.String(), _PATTERN))
def _match_operator(string: str, pattern: Any) -> bool:
    return regex_search(pattern, string) is not None


@specs.name("#operator_!~")
@specs.parameter("string", yaqltypes.String())
@specs.parameter("pattern", yaqltypes.AnyOf(yaqltypes.String(), _PATTERN))
def _no_match_operator(string: str, pattern: Any) -> bool:
    return regex_search(pattern, string) is None


@specs.name("search")
@specs.method
@specs.parameter("regexp", _PATTERN)
@specs.parameter("string", yaqltypes.String())
def _search(regexp: dsl_budget.Regex, string: str) -> str | None:
    found = regex_search(regexp, string)
    return None if found is None else found.group()


@specs.name("replace")
@specs.method
@specs.parameter("regexp", _PATTERN)
@specs.parameter("string", yaqltypes.String())
@specs.parameter("repl", yaqltypes.String())
def _replace(regexp: dsl_budget.Regex, string: str, repl: str, count: int = 0) -> str:
    replacement = dsl_budget.bounded_replacement(string, lambda match: match.expand(repl),
                                                 FORM_MEMORY_QUOTA)
    return _run(regexp, lambda p, t: p.sub(replacement, string, count, timeout=t,
                                           concurrent=True))


@specs.name("split")
@specs.method
@specs.parameter("regexp", _PATTERN)
@specs.parameter("string", yaqltypes.String())
def _split(regexp: dsl_budget.Regex, string: str, max_split: int = 0) -> list[str]:
    return _run(regexp, lambda p, t: p.split(string, max_split, timeout=t, concurrent=True))


@specs.name("escapeRegex")
@specs.parameter("string", yaqltypes.String())
def _escape(string: str) -> str:
    import regex
    return regex.escape(string)


_FUNCTIONS = (_range, _pow, _multiply, _replace_text, _replace_each, _regex, _matches,
              _string_matches, _match_operator, _no_match_operator, _search, _replace, _split,
              _escape)

