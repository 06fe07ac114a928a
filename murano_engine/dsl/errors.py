"""Errors of the interpreter, and the MuranoPL stack trace they carry.

Two families:

* :class:`LoadError` - a package or class file is wrong (bad YAML, unknown
  namespace prefix, malformed manifest ...). It names the file and line.
* :class:`DslError` subclasses and :class:`MuranoPlException` - raised while
  MuranoPL runs. MuranoPL code can catch them by name; each carries the
  MuranoPL stack (package, class, method, file:line:column).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

from murano_engine.dsl.frozen_record import FrozenRecord

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


class Position(tuple):
    """Where something was written: file, 1-based line and column, made as
    ``Position((file, line, column))`` (as Python's ``time.struct_time`` is).

    A tuple underneath, with no constructor of its own: a cached class file holds
    thousands of positions (murano-apps about 3,000 outside its method bodies), and
    reading them back then runs no Python code.
    """

    __slots__ = ()

    file: str = property(itemgetter(0))  # type: ignore[assignment]
    line: int = property(itemgetter(1))  # type: ignore[assignment]
    column: int = property(itemgetter(2))  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Position(file={self[0]!r}, line={self[1]!r}, column={self[2]!r})"

    def __str__(self) -> str:
        return f"{self[0]}:{self[1]}:{self[2]}"


class StackFrame(FrozenRecord):
    """One frame of a MuranoPL stack trace."""

    __slots__ = ("package", "class_name", "method", "position", "instruction")
    package: str
    class_name: str
    method: str
    position: Position | None
    instruction: str

    def __init__(self, package: str, class_name: str, method: str,
                 position: Position | None, instruction: str = "") -> None:
        self._set(package=package, class_name=class_name, method=method, position=position,
                  instruction=instruction)

    def __str__(self) -> str:
        where = str(self.position) if self.position else "<native>"
        line = f"  {self.package} {self.class_name}.{self.method} at {where}"
        if self.instruction:
            line += f"\n      {self.instruction}"
        return line


def format_stack(frames: list[StackFrame]) -> str:
    """Render frames outermost first, like Python's tracebacks.

    As Python does, a run of more than three identical frames (runaway
    recursion) shows three and a count of the rest.
    """
    lines: list[str] = []
    previous, repeats = None, 0
    for line in [str(f) for f in frames] + [None]:
        if line is not None and line == previous:
            repeats += 1
            if repeats < 3:
                lines.append(line)
            continue
        if repeats >= 3:
            lines.append(f"  [previous frame repeated {repeats - 2} more times]")
        previous, repeats = line, 0
        if line is not None:
            lines.append(line)
    return "\n".join(lines)


class LoadError(Exception):
    """A package, manifest, class file or expression could not be loaded.

    ``field`` (keys and indexes from the document's root) names the value at fault
    where ``position`` is only its document's: the package, which has the file's
    text, then finds the value's line (:func:`~murano_engine.dsl.yaml_loader.field_position`).
    """

    def __init__(self, message: str, position: Position | None = None,
                 file: str | None = None, field: tuple[Any, ...] = ()) -> None:
        self.message = message
        self.position = position
        self.field = field
        self.file = file or (position.file if position else None)
        where = str(position) if position else (file or "")
        super().__init__(f"{where}: {message}" if where else message)


class LoadErrors(LoadError):
    """Several load problems found in one pass (``murano-engine validate``)."""

    def __init__(self, problems: list[LoadError]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class DslError(Exception):
    """Base of the errors the interpreter raises while running MuranoPL.

    ``murano_name`` is the qualified name MuranoPL code catches, the same one
    Murano uses, so that ``Catch: With: 'murano.dsl.exceptions.X'`` keeps
    working.
    """

    murano_name = "murano.dsl.exceptions.DslError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.murano_stack: list[StackFrame] | None = None


def _dsl_error(name: str, base: type[DslError] = DslError) -> type[DslError]:
    return type(name, (base,), {"murano_name": f"murano.dsl.exceptions.{name}",
                                "__doc__": f"MuranoPL ``{name}``."})


ContractViolationException = _dsl_error("ContractViolationException")
NoClassFound = _dsl_error("NoClassFound")
NoPackageFound = _dsl_error("NoPackageFound")
NoMethodFound = _dsl_error("NoMethodFound")
NoMatchingMethodException = _dsl_error("NoMatchingMethodException")
# Murano reports argument mismatches with yaql's exception; packages catch that name.
NoMatchingMethodException.murano_name = "yaql.language.exceptions.NoMatchingMethodException"
AmbiguousMethodName = _dsl_error("AmbiguousMethodName")
NoPropertyFound = _dsl_error("NoPropertyFound")
# Reading or writing a property that cannot be: the base of the four below.
PropertyAccessError = _dsl_error("PropertyAccessError")
PropertyReadError = _dsl_error("PropertyReadError", PropertyAccessError)
PropertyWriteError = _dsl_error("PropertyWriteError", PropertyAccessError)
# A property declared by two classes of a hierarchy, neither of which derives the other.
AmbiguousPropertyNameError = _dsl_error("AmbiguousPropertyNameError", PropertyAccessError)
NoWriteAccessError = _dsl_error("NoWriteAccessError", PropertyWriteError)
UninitializedPropertyAccessError = _dsl_error("UninitializedPropertyAccessError",
                                              PropertyAccessError)
ObjectDestroyedError = _dsl_error("ObjectDestroyedError")
NoObjectFoundError = _dsl_error("NoObjectFoundError")
CircularExpressionDependenciesError = _dsl_error("CircularExpressionDependenciesError")
InvalidLhsTargetError = _dsl_error("InvalidLhsTargetError")
DslInvalidOperationError = _dsl_error("DslInvalidOperationError")
DslSyntaxError = _dsl_error("DslSyntaxError")
MethodNotExposed = _dsl_error("MethodNotExposed")
InvalidInheritanceError = _dsl_error("InvalidInheritanceError")
CallDepthExceededError = _dsl_error("CallDepthExceededError")
LoopLimitExceededError = _dsl_error("LoopLimitExceededError")
# Execution budgets of a task (steps, wall-clock time) and per-operation limits.
BudgetExceededError = _dsl_error("BudgetExceededError")
StepBudgetExceededError = _dsl_error("StepBudgetExceededError", BudgetExceededError)
TimeBudgetExceededError = _dsl_error("TimeBudgetExceededError", BudgetExceededError)
MemoryBudgetExceededError = _dsl_error("MemoryBudgetExceededError", BudgetExceededError)
ValueLimitExceededError = _dsl_error("ValueLimitExceededError")
RegexTimeoutError = _dsl_error("RegexTimeoutError")
PolicyViolationException = _dsl_error("PolicyViolationException")


class DslContractSyntaxError(LoadError, DslError):
    """A malformed contract, found when it is first applied; MuranoPL catches it as
    ``murano.dsl.exceptions.DslContractSyntaxError``."""

    murano_name = "murano.dsl.exceptions.DslContractSyntaxError"

    def __init__(self, message: str, position: Position | None = None) -> None:
        LoadError.__init__(self, message, position)
        self.message = message


class MuranoPlException(Exception):
    """An exception thrown by MuranoPL (``Throw``) or a wrapped Python error."""

    def __init__(self, names: list[str], message: str | None,
                 stack: list[StackFrame] | None = None, extra: Any = None,
                 cause: MuranoPlException | None = None,
                 native: BaseException | None = None) -> None:
        self.names = list(names)
        self.message = message
        self.murano_stack = stack or []
        self.extra = extra if extra is not None else {}
        self.cause = cause
        self.native = native
        super().__init__(self.describe())

    def describe(self) -> str:
        return f"[{', '.join(self.names)}]: {self.message}"

    @classmethod
    def wrap(cls, exc: BaseException, stack: list[StackFrame]) -> MuranoPlException:
        """Represent a Python-side error so MuranoPL can catch it by name."""
        if isinstance(exc, MuranoPlException):
            return exc
        return cls([python_name(exc)], _message_of(exc), stack, native=exc)


def _message_of(exc: BaseException) -> str:
    if isinstance(exc, DslError):
        return exc.message
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        return repr(exc.args[0])
    return str(exc)


def python_name(exc: BaseException) -> str:
    """The name MuranoPL knows a Python error by: bare for builtins, else qualified."""
    if isinstance(exc, MuranoPlException) and exc.names:
        return exc.names[0]
    murano_name = getattr(exc, "murano_name", None)
    if murano_name:
        return murano_name
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"


def add_property_frame(exc: BaseException, frame: StackFrame) -> None:
    """Record that ``exc`` came out of a property's contract (a model being loaded,
    ``new()``): the property goes before the frames recorded so far, and the
    method calls around it are still to come (:func:`add_call_stack`)."""
    stack = stack_of(exc)
    if stack and not getattr(exc, "murano_stack_open", False):
        return  # raised by a method the contract called: its stack is complete
    try:
        exc.murano_stack = [frame, *stack]  # type: ignore[attr-defined]
        exc.murano_stack_open = True  # type: ignore[attr-defined]
    except AttributeError:
        pass


def add_call_stack(exc: BaseException, stack: Callable[[], list[StackFrame]]) -> None:
    """Record the MuranoPL calls an error came out of, unless a call nearer to it
    already did."""
    recorded = stack_of(exc)
    if recorded and not getattr(exc, "murano_stack_open", False):
        return
    try:
        exc.murano_stack = stack() + recorded  # type: ignore[attr-defined]
        exc.murano_stack_open = False  # type: ignore[attr-defined]
    except AttributeError:
        pass


def stack_of(exc: BaseException) -> list[StackFrame]:
    """The MuranoPL stack recorded on an exception, if any."""
    return getattr(exc, "murano_stack", None) or []
