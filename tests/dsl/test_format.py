"""The safe ``format()``: positional and named fields and specs, no traversal into objects."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from dsl_helpers import class_text, run_method, write_package

from murano_engine.dsl.library.text import format_
from murano_engine.dsl.objects import MuranoObject

FMT = class_text("t.fmt", "Fmt", """
    Methods:
      call:
        Arguments:
          - template:
              Contract: $.string().notNull()
        Body:
          - Return: format($template, 1, x => 2)
      methodForm:
        Body:
          - Return: !yaql "'{0}-{x}'.format(7, x => 8)"
      withObject:
        Arguments:
          - template:
              Contract: $.string().notNull()
        Body:
          - Return: format($template, $this, obj => $this)
      scalars:
        Body:
          - Return: format('{0} {1} {2} {3}', true, false, null, [1, 2])
""")


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("fmt")
    write_package(root, "t.fmt", {"Fmt": FMT})
    return [root]


@pytest.mark.parametrize(("template", "expected"), [
    ("{0} {x}", "1 2"),
    ("{} and {x}", "1 and 2"),
    ("{0:>5}|{x:<3}|", "    1|2  |"),
    ("{0:03d} {x:.2f} {0:x}", "001 2.00 1"),
    ("{{literal}} {0}", "{literal} 1"),
    ("{0:>{x}}", " 1"),
    ("no fields", "no fields"),
])
def test_format_in_murano_code(pkgs: list[Path], template: str, expected: str) -> None:
    assert run_method(pkgs, "t.fmt.Fmt.call", template=template) == expected


def test_format_as_a_method(pkgs: list[Path]) -> None:
    assert run_method(pkgs, "t.fmt.Fmt.methodForm") == "7-8"


def test_format_shows_booleans_and_null_as_yaql_does(pkgs: list[Path]) -> None:
    assert run_method(pkgs, "t.fmt.Fmt.scalars") == "true false null (1, 2)"


@pytest.mark.parametrize("template", [
    "{0.__class__}", "{0[0]}", "{x.__class__.__mro__}", "{x[0]}", "{0.real}",
    "{0:>{x.__class__}}", "{0.__init__.__globals__}",
])
def test_attribute_and_index_fields_are_rejected(pkgs: list[Path], template: str) -> None:
    with pytest.raises(ValueError, match=re.escape("may not use '.' or '['")) as caught:
        run_method(pkgs, "t.fmt.Fmt.call", template=template)
    assert caught.value.murano_stack[-1].method == "call"


@pytest.mark.parametrize("template", [
    "{0.executor}", "{obj.murano_class.package.loader}", "{0.__dict__}", "{obj[id]}",
])
def test_no_host_attribute_of_an_object_is_reachable(pkgs: list[Path], template: str) -> None:
    with pytest.raises(ValueError, match=re.escape("may not use '.' or '['")):
        run_method(pkgs, "t.fmt.Fmt.withObject", template=template)


def test_an_object_formats_as_its_class_and_id(pkgs: list[Path]) -> None:
    text = run_method(pkgs, "t.fmt.Fmt.withObject", template="{0} {obj!s} {obj!r}")
    assert "t.fmt.Fmt" in text
    assert "0x" not in text and "murano_engine" not in text


@pytest.mark.parametrize(("template", "error"), [
    ("{2}", IndexError), ("{} {} {}", IndexError), ("{y}", KeyError), ("{", ValueError),
])
def test_missing_fields_are_ordinary_errors(pkgs: list[Path], template: str,
                                            error: type[Exception]) -> None:
    with pytest.raises(error) as caught:
        run_method(pkgs, "t.fmt.Fmt.call", template=template)
    assert type(caught.value) is error
    assert caught.value.murano_stack[-1].method == "call"


def test_format_function_directly() -> None:
    assert format_(None, "{0}+{1}={total}", 1, 2, total=3) == "1+2=3"
    assert format_(None, "{0!r}", "x") == "'x'"
    with pytest.raises(ValueError, match="may not use"):
        format_(None, "{0.__class__.__subclasses__}", MuranoObject)
    with pytest.raises(ValueError, match="may not use"):
        format_(None, "{0[__builtins__]}", {"__builtins__": 1})


@pytest.mark.parametrize(("template", "args", "kwargs"), [
    ("item-{0}", (5,), {}), ("{}-{}", (1, "a"), {}), ("{0}{1}{0}", ("x", 2.5), {}),
    ("{a}/{b}", (), {"a": "q", "b": 3}), ("{0}", (), {}), ("{}{0}", (1, 2), {}),
    ("{x}", (), {}), ("{0:>5}", (1,), {}), ("{0!r}", ("a",), {}), ("{0}", (True,), {}),
    ("{0}", (None,), {}), ("{", (), {}), ("}}{{{0}", (1,), {}), ("{0.x}", (1,), {}),
    ("{1}", (1,), {}), ("{01}", (1, 2), {}), ("{0}", ((1, 2),), {}), ("{ 0}", (1,), {}),
    ("{0}", ("x" * 600_000,), {}), ("{0}{0}", ("x" * 300_000,), {}),
])
def test_bare_fields_format_as_the_safe_formatter_does(template: str, args: tuple,
                                                       kwargs: dict) -> None:
    from murano_engine.dsl.library.text import SafeFormatter

    def outcome(run: object) -> tuple:
        try:
            return ("value", run())  # type: ignore[operator]
        except Exception as exc:  # noqa: BLE001 - the error is the outcome
            return ("error", type(exc).__name__, str(exc))

    assert outcome(lambda: format_(None, template, *args, **kwargs)) == \
        outcome(lambda: SafeFormatter().vformat(template, args, kwargs))
