"""The class-file YAML loader: which plain scalars become expressions, positions, errors."""

from __future__ import annotations

import pytest

from murano_engine.dsl.errors import LoadError, Position
from murano_engine.dsl.expressions import Expression, try_parse
from murano_engine.dsl.yaml_loader import SourceMap, load_documents, load_plain, position_of


def load(text: str, filename: str = "C.yaml") -> object:
    (doc,) = load_documents(text, filename, try_parse)
    return doc


@pytest.mark.parametrize("scalar", ["foo", "io.murano.Object", "hello world", "a_b.c d",
                                    "42abc", "x.y.z"])
def test_plain_words_stay_strings(scalar: str) -> None:
    assert load(f"v: {scalar}\n")["v"] == scalar
    assert type(load(f"v: {scalar}\n")["v"]) is str


@pytest.mark.parametrize("scalar", ["$x", "f()", "a + b", "$.name", "$x.len() > 2", "ns:Name",
                                    "not $x"])
def test_plain_scalars_that_parse_become_expressions(scalar: str) -> None:
    value = load(f"v: {scalar}\n")["v"]
    assert isinstance(value, Expression)
    assert value.source == scalar


@pytest.mark.parametrize("text", ["v: '$x'\n", 'v: "$x"\n', "v: |\n  $x\n", "v: >\n  f()\n"])
def test_quoted_and_block_scalars_stay_strings(text: str) -> None:
    value = load(text)["v"]
    assert type(value) is str
    assert value.strip() in ("$x", "f()")


def test_a_plain_scalar_that_is_not_yaql_stays_a_string() -> None:
    value = load("v: $x +\n")["v"]
    assert value == "$x +"
    assert type(value) is str


def test_yaql_tag_forces_an_expression() -> None:
    value = load("v: !yaql 'foo'\nw: !yaql io.murano\n")
    assert isinstance(value["v"], Expression) and value["v"].source == "foo"
    assert isinstance(value["w"], Expression)


def test_yaql_tag_on_invalid_yaql_is_a_load_error_at_its_position() -> None:
    with pytest.raises(LoadError) as caught:
        load("a: 1\nv: !yaql '1 +'\n", "T.yaml")
    assert caught.value.position == Position(("T.yaml", 2, 4))
    assert "T.yaml:2:4" in str(caught.value)


def test_explicit_str_tag_keeps_a_string() -> None:
    doc = load("v: !!str $x\nw: $y\n")
    assert doc["v"] == "$x" and type(doc["v"]) is str
    assert isinstance(doc["w"], Expression)


def test_non_string_scalars_keep_their_yaml_types() -> None:
    doc = load("a: 1\nb: 2.5\nc: true\nd: null\ne: yes\n")
    assert doc == {"a": 1, "b": 2.5, "c": True, "d": None, "e": True}


def test_mappings_record_their_position() -> None:
    doc = load("Name: A\nMethods:\n  run:\n    Body:\n      - Return: 1\n", "pkg/A.yaml")
    assert isinstance(doc, SourceMap)
    assert doc.position == Position(("pkg/A.yaml", 1, 1))
    run = doc["Methods"]["run"]
    assert position_of(run) == Position(("pkg/A.yaml", 4, 5))
    instruction = run["Body"][0]
    assert position_of(instruction) == Position(("pkg/A.yaml", 5, 9))
    assert str(position_of(instruction)) == "pkg/A.yaml:5:9"


def test_expressions_record_their_position() -> None:
    doc = load("x:\n  - 1\n  -   $a + 1\n", "E.yaml")
    expr = doc["x"][1]
    assert isinstance(expr, Expression)
    assert expr.position == Position(("E.yaml", 3, 7))


def test_several_documents_are_loaded_in_order() -> None:
    docs = load_documents("a: 1\n---\nb: $x\n", "M.yaml", try_parse)
    assert docs[0] == {"a": 1}
    assert isinstance(docs[1]["b"], Expression)
    assert docs[1].position == Position(("M.yaml", 3, 1))


@pytest.mark.parametrize(("text", "line"), [
    ("a: 1\nb: [1, 2\nc: 3\n", 3),
    ("a: 1\n  b: 2\n", 2),
    ("a:\n\t- 1\n", 2),
    ("a: 'unterminated\n", 2),
    ("a: 1\nb: {x: 1\n", 3),
])
def test_malformed_yaml_is_a_load_error_naming_file_and_line(text: str, line: int) -> None:
    with pytest.raises(LoadError) as caught:
        load_documents(text, "pkg/Classes/Bad.yaml", try_parse)
    error = caught.value
    assert error.file == "pkg/Classes/Bad.yaml"
    assert error.position is not None and error.position.line == line
    assert str(error).startswith(f"pkg/Classes/Bad.yaml:{line}:")
    assert "malformed YAML" in str(error)


def test_duplicate_keys_are_refused_at_the_key() -> None:
    with pytest.raises(LoadError) as caught:
        load("a: 1\nb: 2\na: 3\n", "D.yaml")
    assert caught.value.position == Position(("D.yaml", 3, 1))
    assert "duplicate key 'a'" in str(caught.value)


def test_a_mapping_as_key_is_refused() -> None:
    with pytest.raises(LoadError) as caught:
        load("? {a: 1}\n: 2\n", "K.yaml")
    assert "K.yaml:1:3" in str(caught.value)


def test_bytes_input_and_str_tag_in_bytes() -> None:
    (doc,) = load_documents(b"v: !!str $x\nw: $y\n", "B.yaml", try_parse)
    assert doc["v"] == "$x" and isinstance(doc["w"], Expression)


def test_load_plain_never_makes_expressions() -> None:
    assert load_plain("v: $x\nw: f()\n", "manifest.yaml") == {"v": "$x", "w": "f()"}
    assert load_plain("", "manifest.yaml") is None
    with pytest.raises(LoadError, match="one YAML document"):
        load_plain("a: 1\n---\nb: 2\n", "manifest.yaml")


def test_undefined_tags_are_load_errors() -> None:
    with pytest.raises(LoadError) as caught:
        load("a: !!python/object:os.system ls\n", "Evil.yaml")
    assert "Evil.yaml:1:" in str(caught.value)
