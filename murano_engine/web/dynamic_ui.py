"""Murano's dynamic UI (``UI/ui.yaml``, versions 2.0-2.4): forms, their checks, and the
``Application`` template evaluated into an object model, as Murano's dashboard does.

A definition has ``Forms`` (wizard pages, each a list of fields and optional
form-level ``validators``), an ``Application`` template, optional ``Templates``
and ``Parameters``. Plain (unquoted) scalars that parse as yaql, and ``!yaql``
scalars, are expressions. The template is evaluated with ``$`` set to the
cleaned answers (``{form: {field: value}}``), ``$name`` to a template or
parameter, and the dashboard's functions ``generateHostname``, ``repeat``,
``name``, ``ref`` plus ``randomName`` (yaql in its legacy mode, as the dashboard
runs it: functions are methods too, ``$.x.bool()``). Every object header without an id gets
a new one; from version 2.2 the application's name (a field added to the last
form) is the application object's name (``?.name``, what ``name($this)`` gives),
also kept under the header's dashboard key.

Field values come from a browser (strings) or from JSON answers (typed); this
module has no web dependency: :func:`translate` turns a definition and answers
into a model. Every expression and regexp check runs with the limits of
:mod:`murano_engine.web.form_budget`, and spends the budget a caller puts in force with
:func:`~murano_engine.web.form_budget.spending` (the API and ``murano-engine ui-model`` do):
a limit met is a :class:`~murano_engine.web.form_budget.FormLimitError`, which ends the whole
evaluation.
"""

from __future__ import annotations

import functools
import ipaddress
import random
import re
import string
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from yaql.language import exceptions as yaql_exceptions
from yaql.language import specs, yaqltypes

from murano_engine.dsl.errors import LoadError, Position
from murano_engine.dsl.yaml_loader import load_documents, position_of
from murano_engine.web import form_budget

#: the newest version of the format read here (any 2.x up to it is read)
LATEST_VERSION = (2, 4)
#: where Murano's dashboard keeps its own attributes (the application's name) in ``?``
DASHBOARD_KEY = "_26411a1861294160833743e45d0eaad9"
#: the field added to the last form from version 2.2
APP_NAME_FIELD = "application_name"

CLOUD_TYPES = ("flavor", "image", "keypair", "azone", "network", "securitygroup", "volume")
SIMPLE_TYPES = ("string", "text", "boolean", "integer", "password", "choice", "clusterip",
                "floatingip", "databaselist")
PASSWORD_SPECIALS = "!@#$%^&*()_+|\\/.,~?><:{}"
_DB_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$#@]*$")
_FQN = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
REQUIRED = "This field is required."
INVALID = "Enter a valid value."

#: the choices of a cloud-backed or application field: ``(field) -> [(key, label)]``, or
#: None when the caller cannot list them (the value is then taken as given)
Choices = Callable[["Field"], "list[tuple[str, str]] | None"]


class UiError(ValueError):
    """A definition that cannot be used, or answers that do not pass (names each problem)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message + "".join(f"\n  {p}" for p in problems or []))
        self.message = message
        self.problems = problems or []


class Expr:
    """A yaql expression written in the UI definition."""

    __slots__ = ("source", "position", "parsed")

    def __init__(self, source: str, position: Position | None, parsed: Any) -> None:
        self.source = source
        self.position = position
        self.parsed = parsed

    def __repr__(self) -> str:
        return f"Expr({self.source!r})"


def _make_expr(text: str, position: Position | None) -> Expr | None:
    try:
        return Expr(text, position, form_budget.engine()(text))
    except (yaql_exceptions.YaqlException, KeyError, IndexError):
        return None


# -- yaql functions of the dashboard ----------------------------------------------------

_counter = 0


def _to_base36(number: int) -> str:
    digits = string.digits + string.ascii_lowercase
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out


@specs.name("generateHostname")
@specs.parameter("pattern", yaqltypes.String(nullable=True))
@specs.parameter("number", int)
def generate_hostname(pattern: str | None, number: int) -> str:
    """``#`` in ``pattern`` becomes ``number``; no pattern gives a short unique name."""
    global _counter
    if pattern:
        return pattern.replace("#", str(number))
    _counter += 1
    letters = "".join(random.choice(string.ascii_lowercase) for _ in range(5))
    return letters + _to_base36(int(time.time() * 1000))[:8] + _to_base36(_counter)


@specs.name("randomName")
def random_name() -> str:
    """A random lower-case name (MuranoPL's ``randomName()``)."""
    return random.choice(string.ascii_lowercase) + uuid.uuid4().hex[:11]


class _Evaluation:
    """One evaluation of the ``Application`` template: its context and ``ref`` cache."""

    def __init__(self, ui: UiDefinition, data: Mapping[str, Any], app_name: str) -> None:
        self.ui = ui
        self.refs: dict[str, Any] = {}
        context = form_budget.create_context()
        context.register_function(generate_hostname)
        context.register_function(random_name)
        context.register_function(self._repeat())
        context.register_function(specs.name("name")(lambda: app_name))
        context.register_function(self._ref())
        for name, template in ui.templates.items():
            context[name] = template
        for name, value in ui.parameters.items():
            context[name] = value
        context["$"] = dict(data)
        self.context = context

    def _repeat(self) -> Callable:
        evaluate = self.evaluate

        @specs.name("repeat")
        @specs.parameter("template", yaqltypes.Lambda(with_context=True))
        @specs.parameter("times", int)
        @specs.inject("context", yaqltypes.Context())
        def repeat(context: Any, template: Callable, times: int) -> list:
            """``template`` ``times`` times, with ``$index`` from 1."""
            out = []
            for index in range(1, times + 1):
                child = context.create_child_context()
                child["index"] = index
                out.append(evaluate(template(child), child))
            return out
        return repeat

    def _ref(self) -> Callable:
        evaluate, refs, templates = self.evaluate, self.refs, self.ui.templates

        @specs.name("ref")
        @specs.parameter("template_name", yaqltypes.String())
        @specs.parameter("parameter_name", yaqltypes.String(nullable=True))
        @specs.parameter("id_only", bool)
        @specs.inject("context", yaqltypes.Context())
        def ref(context: Any, template_name: str, parameter_name: str | None = None,
                id_only: bool = False) -> Any:
            """The object of a template once (with an id), its id on later calls."""
            key = parameter_name or template_name
            if key in refs:
                return refs[key]["?"]["id"]
            if template_name not in templates:
                raise UiError(f"ref(): there is no template {template_name!r}")
            value = evaluate(templates[template_name], context)
            if not isinstance(value, dict):
                raise UiError(f"ref(): template {template_name!r} is not an object")
            value.setdefault("?", {}).setdefault("id", uuid.uuid4().hex)
            refs[key] = value
            return value["?"]["id"] if id_only else value
        return ref

    def evaluate(self, value: Any, context: Any = None) -> Any:
        """``value`` with its expressions evaluated (results evaluated again, so a
        template reached through ``$name`` is evaluated where it is used)."""
        context = context if context is not None else self.context
        if isinstance(value, Expr):
            form_budget.step()
            return self.evaluate(_run(value, context), context)
        if isinstance(value, Mapping):
            return {self.evaluate(k, context): self.evaluate(v, context)
                    for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.evaluate(v, context) for v in value]
        return value


def evaluate_with(value: Any, data: Any, parameters: Mapping[str, Any] | None = None) -> Any:
    """``value`` (maybe an expression) evaluated with ``$`` = ``data`` (field attributes,
    form validators); plain values come back as they are."""
    if not isinstance(value, Expr):
        return value
    context = form_budget.create_context()
    context.register_function(generate_hostname)
    context.register_function(random_name)
    for name, item in (parameters or {}).items():
        context[name] = item
    context["$"] = data
    return _run(value, context)


def _run(expr: Expr, context: Any) -> Any:
    """``expr`` evaluated in ``context``: a failure is a UiError naming the expression,
    a limit met a FormLimitError naming it."""
    try:
        return expr.parsed.evaluate(context=context)
    except (UiError, form_budget.FormLimitError):
        raise
    except form_budget.LIMIT_ERRORS as exc:
        raise form_budget.FormLimitError(
            f"expression {expr.source!r}{_at(expr.position)}: "
            f"{form_budget.limit_message(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - any yaql failure names the expression
        raise UiError(f"expression {expr.source!r}{_at(expr.position)} failed: {exc}") \
            from None


def _at(position: Position | None) -> str:
    return f" ({position})" if position else ""


# -- the definition --------------------------------------------------------------------

@dataclass
class Validator:
    """One entry of ``validators``: a regexp or a yaql test of the value, and its message."""

    message: str
    regexp: str | None = None
    expr: Expr | None = None


@dataclass
class Field:
    """One control of a form."""

    name: str
    type: str
    form: str
    label: Any = ""
    description: Any = None
    description_title: Any = None
    help_text: Any = None
    required: Any = True
    hidden: Any = False
    initial: Any = None
    min_length: Any = None
    max_length: Any = None
    min_value: Any = None
    max_value: Any = None
    regexp: str | None = None
    validators: list[Validator] = field(default_factory=list)
    error_messages: dict[str, str] = field(default_factory=dict)
    choices: Any = None
    confirm: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    position: Position | None = None

    @property
    def where(self) -> str:
        return f"{self.form}.{self.name}"

    @property
    def is_application(self) -> bool:
        """A picker of applications of a class (the field's type is its name)."""
        return self.type not in CLOUD_TYPES + SIMPLE_TYPES


@dataclass
class Form:
    name: str
    fields: list[Field]
    validators: list[tuple[Expr | Any, str]]


@dataclass
class UiDefinition:
    version: tuple[int, int]
    forms: list[Form]
    application: Any
    templates: dict[str, Any]
    parameters: dict[str, Any]
    filename: str
    #: (class, method) of ``ParametersSource`` (2.4): a public static method whose
    #: returned mapping joins ``parameters`` (see :func:`add_parameters`)
    parameters_source: tuple[str, str] | None = None


def _version(value: Any, filename: str) -> tuple[int, int]:
    if value is None:
        return LATEST_VERSION
    found = re.fullmatch(r"(\d+)(?:\.(\d+))?", str(value).strip())
    if not found:
        raise UiError(f"{filename}: Version {value!r} is not MAJOR.MINOR")
    version = (int(found.group(1)), int(found.group(2) or 0))
    if version[0] != LATEST_VERSION[0] or version > LATEST_VERSION:
        raise UiError(f"{filename}: Version {value} is not supported; this reads 2.0 to "
                      f"{LATEST_VERSION[0]}.{LATEST_VERSION[1]}")
    return version


def _where(filename: str, node: Any) -> str:
    position = position_of(node) if isinstance(node, Mapping) else None
    return str(position) if position else filename


def _choices_of(value: Any, where: str) -> Any:
    if value is None or isinstance(value, Expr):
        return value
    if isinstance(value, Mapping):
        return [(str(k), str(v)) for k, v in value.items()]
    if isinstance(value, list):
        pairs = []
        for item in value:
            if not isinstance(item, list) or len(item) != 2:
                raise UiError(f"{where}: each choice is [key, display value], not {item!r}")
            pairs.append((str(item[0]), str(item[1])))
        return pairs
    raise UiError(f"{where}: choices is a list of [key, display value] pairs or a mapping")


_KNOWN = {"name", "type", "label", "description", "descriptionTitle", "helpText", "required",
          "hidden", "initial", "minLength", "maxLength", "minValue", "maxValue",
          "regexpValidator", "validators", "errorMessages", "choices", "confirmInput",
          "widgetMedia"}


def _field(spec: Any, form: str, filename: str, version: tuple[int, int]) -> Field:
    where = _where(filename, spec)
    if not isinstance(spec, Mapping) or "name" not in spec or "type" not in spec:
        raise UiError(f"{where}: a field of form {form!r} needs a name and a type")
    name, kind = str(spec["name"]), str(spec["type"])
    if kind not in CLOUD_TYPES + SIMPLE_TYPES and not _FQN.match(kind):
        raise UiError(f"{where}: field {form}.{name} has the unknown type {kind!r}")
    if kind == "network" and version < (2, 1):
        raise UiError(f"{where}: field {form}.{name}: network fields need Version 2.1")
    validators = []
    for item in spec.get("validators") or []:
        if not isinstance(item, Mapping) or "expr" not in item:
            raise UiError(f"{where}: field {form}.{name}: each validator needs an expr")
        expr = item["expr"]
        message = str(item.get("message") or "")
        if isinstance(expr, Mapping) and "regexpValidator" in expr:
            validators.append(Validator(message, regexp=str(expr["regexpValidator"])))
        elif isinstance(expr, Expr):
            validators.append(Validator(message, expr=expr))
        else:
            raise UiError(f"{where}: field {form}.{name}: a validator's expr is a yaql "
                          f"expression or {{regexpValidator: ...}}, not {expr!r}")
    if kind == "password" and version < (2, 3) and (validators or "regexpValidator" in spec):
        validators, spec = [], {k: v for k, v in spec.items() if k != "regexpValidator"}
    messages = spec.get("errorMessages") or {}
    if not isinstance(messages, Mapping):
        raise UiError(f"{where}: field {form}.{name}: errorMessages is a mapping")
    if isinstance(spec.get("regexpValidator"), str):
        try:
            re.compile(spec["regexpValidator"])
        except re.error as exc:
            raise UiError(f"{where}: field {form}.{name}: bad regexpValidator: {exc}") from None
    label = spec.get("label")
    return Field(
        name=name, type=kind, form=form,
        label=label if label is not None else name.replace("_", " ").capitalize(),
        description=spec.get("description"), description_title=spec.get("descriptionTitle"),
        help_text=spec.get("helpText"),
        required=False if kind in ("boolean", "floatingip") else spec.get("required", True),
        hidden=spec.get("hidden", False), initial=spec.get("initial"),
        min_length=spec.get("minLength"), max_length=spec.get("maxLength"),
        min_value=spec.get("minValue"), max_value=spec.get("maxValue"),
        regexp=spec.get("regexpValidator"), validators=validators,
        error_messages={str(k): str(v) for k, v in messages.items()},
        choices=_choices_of(spec.get("choices"), f"{where}: field {form}.{name}"),
        confirm=bool(spec.get("confirmInput", True)),
        extra={k: v for k, v in spec.items() if k not in _KNOWN},
        position=position_of(spec) if isinstance(spec, Mapping) else None)


def parse(text: str | bytes, filename: str = "ui.yaml", app_name: str = "") -> UiDefinition:
    """Read a UI definition; problems name the file and line. ``app_name`` is the initial
    application name (2.2 and later)."""
    try:
        docs = load_documents(text, filename, _make_expr)
    except LoadError as exc:
        raise UiError(str(exc)) from None
    if len(docs) != 1 or not isinstance(docs[0], Mapping):
        raise UiError(f"{filename}: a UI definition is one YAML mapping")
    root = docs[0]
    version = _version(root.get("Version"), filename)
    if "Application" not in root:
        raise UiError(f"{filename}: the Application section is required")
    if not isinstance(root.get("Forms"), list):
        raise UiError(f"{filename}: Forms is required: a list of named forms")
    forms = []
    for item in root["Forms"]:
        if not isinstance(item, Mapping) or len(item) != 1:
            raise UiError(f"{_where(filename, item)}: each form is a mapping of its name to "
                          f"its fields")
        name, body = next(iter(item.items()))
        body = body or {}
        if not isinstance(body, Mapping) or not isinstance(body.get("fields", []), list):
            raise UiError(f"{_where(filename, item)}: form {name!r} needs a list of fields")
        fields = [_field(spec, str(name), filename, version) for spec in body.get("fields", [])]
        names = [f.name for f in fields]
        for repeated in {n for n in names if names.count(n) > 1}:
            raise UiError(f"{_where(filename, item)}: form {name!r} has two fields named "
                          f"{repeated!r}")
        checks = []
        for check in body.get("validators") or []:
            if not isinstance(check, Mapping) or "expr" not in check:
                raise UiError(f"{_where(filename, check)}: a form validator needs an expr")
            checks.append((check["expr"], str(check.get("message") or "")))
        forms.append(Form(str(name), fields, checks))
    if not forms:
        raise UiError(f"{filename}: Forms has no form")
    header = root["Application"].get("?") if isinstance(root["Application"], Mapping) else None
    if not app_name and isinstance(header, Mapping) and isinstance(header.get("type"), str):
        app_name = header["type"].rsplit(".", 1)[-1]
    if version >= (2, 2) and _name_field(forms) is None:
        forms[-1].fields.append(Field(
            name=APP_NAME_FIELD, type="string", form=forms[-1].name, label="Application name",
            initial=app_name, help_text="How the environment lists this application",
            max_length=255))
    ui = UiDefinition(version, forms, root["Application"], dict(root.get("Templates") or {}),
                      {}, filename)
    if version >= (2, 4):
        ui.parameters = {k: evaluate_with(v, {}) for k, v in
                         dict(root.get("Parameters") or {}).items()}
        ui.parameters_source = _source(root.get("ParametersSource"), header, filename)
    return ui


def package_problems(path: Any) -> list[str]:
    """The problems of the UI definition of the package at ``path`` (a folder or a zip);
    none without one, or when its manifest cannot be read (a problem of its own)."""
    from murano_engine.dsl.errors import LoadErrors
    from murano_engine.dsl.packages import open_source, read_manifest
    try:
        source = open_source(path)
        relpath = "UI/" + str(read_manifest(source).get("UI") or "ui.yaml")
        if not source.exists(relpath):
            return []
        text = source.read(relpath)
    except (LoadError, LoadErrors, OSError):
        return []
    return problems(text, source.display(relpath))


def problems(text: str | bytes, filename: str) -> list[str]:
    """The problems of a UI definition (none when it can be used)."""
    try:
        parse(text, filename)
    except UiError as exc:
        return [str(exc)]
    return []


def _source(value: Any, header: Any, filename: str) -> tuple[str, str] | None:
    """``ParametersSource``'s class and method; without a class, the Application's."""
    if value is None:
        return None
    text = str(value).strip()
    class_name, _, method = text.rpartition(".")
    if not class_name:
        if not isinstance(header, Mapping) or not isinstance(header.get("type"), str):
            raise UiError(f"{filename}: ParametersSource {text!r} names no class and the "
                          f"Application has no literal type")
        class_name = header["type"]
    if not method or not re.fullmatch(r"\w+", method):
        raise UiError(f"{filename}: ParametersSource is Class.method or method, not {text!r}")
    return class_name, method


def add_parameters(ui: UiDefinition, values: Any) -> None:
    """Merge what ``ParametersSource``'s method returned into the parameters."""
    if not isinstance(values, Mapping):
        raise UiError(f"{ui.filename}: ParametersSource {'.'.join(ui.parameters_source or ())}"
                      f" returned {type(values).__name__}, not a mapping")
    ui.parameters.update(values)


# -- answers -----------------------------------------------------------------------------

def attribute(ui: UiDefinition, value: Any, data: Mapping[str, Any]) -> Any:
    """A field attribute (label, initial, choices...): expressions see the answers so far."""
    return evaluate_with(value, dict(data), ui.parameters)


def _text(raw: Any) -> str:
    if raw is None:
        return ""
    if isinstance(raw, bool):
        return "true" if raw else ""
    return str(raw).strip()


def _check_regexp(pattern: str, value: str, message: str, where: str) -> None:
    """ValueError(``message``) unless ``pattern`` matches in ``value`` (within the regex
    timeout: past it a FormLimitError)."""
    try:
        found = form_budget.regex_search(pattern, value)
    except form_budget.LIMIT_ERRORS as exc:
        raise form_budget.FormLimitError(
            f"{where}: regexpValidator {pattern[:80]!r}: {form_budget.limit_message(exc)}"
        ) from None
    if found is None:
        raise ValueError(message)


def clean_field(ui: UiDefinition, spec: Field, raw: Any, data: Mapping[str, Any],
                choices: Choices | None = None, confirmation: Any = None) -> Any:
    """The value of one field from its answer, or ValueError with the message to show."""
    attr = functools.partial(attribute, ui, data=data)
    messages = spec.error_messages
    invalid = messages.get("invalid")
    if spec.type in ("boolean", "floatingip"):
        if isinstance(raw, str):
            return raw.strip().lower() in ("on", "true", "1", "yes")
        return bool(raw)
    if spec.type == "password":
        text: Any = "" if raw is None else str(raw)
    elif raw is None or isinstance(raw, str) or spec.type in (
            "string", "text", "clusterip", "databaselist"):
        text = _text(raw)
    else:  # typed JSON answers: numbers, choices' keys, a network pair
        text = raw
    empty = text in ("", None) or text == []
    if empty:
        auto = spec.type == "network" and spec.extra.get("allow_auto", True)
        if attr(spec.required) and not attr(spec.hidden) and not auto:
            raise ValueError(messages.get("required") or REQUIRED)
        return {"integer": None, "databaselist": [], "network": [None, None]}.get(
            spec.type, None if spec.is_application else "")
    value: Any = text
    if spec.type == "integer":
        try:
            value = int(str(text).strip()) if not isinstance(text, bool) else None
        except ValueError:
            value = None
        if value is None:
            raise ValueError(invalid or "Enter a whole number.")
        low, high = attr(spec.min_value), attr(spec.max_value)
        if low is not None and value < int(low):
            raise ValueError(f"Ensure this value is greater than or equal to {low}.")
        if high is not None and value > int(high):
            raise ValueError(f"Ensure this value is less than or equal to {high}.")
    elif spec.type == "databaselist":
        value = [name.strip() for name in str(text).split(",")]
        for name in value:
            if not _DB_NAME.match(name):
                raise ValueError(invalid or (
                    "Each database name starts with a Latin letter or an underscore, then "
                    "has letters, digits, underscores, @, # or $."))
    elif spec.type == "clusterip":
        try:
            ipaddress.IPv4Address(str(text))
        except ValueError:
            raise ValueError(invalid or "Enter a valid IPv4 address.") from None
    elif spec.type == "network":
        value = list(text) if isinstance(text, (list, tuple)) else \
            [part or None for part in str(text).split(",", 1)] + ([None] if "," not in
                                                                 str(text) else [])
    elif spec.type not in ("string", "text", "password"):
        value = str(text)
    if spec.type in ("string", "text", "password", "clusterip", "databaselist"):
        length = len(text)
        low, high = attr(spec.min_length), attr(spec.max_length)
        if spec.type == "password" and not spec.regexp and not spec.validators:
            low, high = max(int(low or 0), 7), min(int(high or 255), 255)
        if low is not None and length < int(low):
            raise ValueError(f"Ensure this value has at least {low} characters "
                             f"(it has {length}).")
        if high is not None and length > int(high):
            raise ValueError(f"Ensure this value has at most {high} characters "
                             f"(it has {length}).")
    if spec.type in ("choice", *CLOUD_TYPES) or spec.is_application:
        options = attr(spec.choices) if spec.type == "choice" else (
            choices(spec) if choices is not None else None)
        if options is not None:
            key = ",".join("" if v is None else str(v) for v in value) \
                if spec.type == "network" else str(value)
            if key not in [str(k) for k, _ in options]:
                raise ValueError(f"Select a valid choice. {key} is not one of the available "
                                 f"choices.")
    if spec.type == "password":
        if not spec.regexp and not spec.validators and not _strong(text):
            raise ValueError(invalid or (
                "The password needs a lower-case letter, an upper-case letter, a digit and "
                f"one of {PASSWORD_SPECIALS}"))
        if spec.confirm and attr(spec.required) and confirmation is not None \
                and str(confirmation) != text:
            raise ValueError("The passwords do not match.")
    if spec.regexp:
        _check_regexp(str(spec.regexp), str(text), invalid or INVALID, spec.where)
    for check in spec.validators:
        if check.regexp is not None:
            _check_regexp(check.regexp, str(text), check.message, spec.where)
        elif not evaluate_with(check.expr, value, ui.parameters):
            raise ValueError(check.message)
    return value


def _strong(text: str) -> bool:
    return (any(c.islower() for c in text) and any(c.isupper() for c in text)
            and any(c.isdigit() for c in text) and any(c in PASSWORD_SPECIALS for c in text))


def confirmation_name(spec: Field) -> str:
    """The name of a password's confirmation input."""
    return f"{spec.name}-clone"


def clean_form(ui: UiDefinition, form: Form, answers: Mapping[str, Any],
               data: Mapping[str, Any], choices: Choices | None = None
               ) -> tuple[dict[str, Any], dict[str, str]]:
    """One form's values and its errors by field (``""`` for form-level ones).

    ``data`` holds the earlier forms' values; a field with no answer takes its initial
    value (a hidden field always does)."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for spec in form.fields:
        current = {**data, form.name: values}
        if attribute(ui, spec.hidden, current) or spec.name not in answers:
            raw = confirmation = attribute(ui, spec.initial, current)
        else:
            raw = answers[spec.name]
            confirmation = answers.get(confirmation_name(spec), "" if isinstance(
                answers, _BrowserAnswers) else raw)
        try:
            values[spec.name] = clean_field(ui, spec, raw, current, choices, confirmation)
        except ValueError as exc:
            errors[spec.name] = str(exc)
        except UiError as exc:
            errors[spec.name] = exc.message
    if not errors:
        current = {**data, form.name: values}
        for expr, message in form.validators:
            if not evaluate_with(expr, current, ui.parameters):
                errors[""] = message or "The form's values do not fit together."
                break
    return values, errors


class _BrowserAnswers(dict):
    """Answers posted by a browser: a password's confirmation must be there too."""


def browser_answers(posted: Mapping[str, Any]) -> dict[str, Any]:
    """Answers from an HTML form post (a missing password confirmation is an error)."""
    return _BrowserAnswers(posted)


def clean_all(ui: UiDefinition, answers: Mapping[str, Mapping[str, Any]],
              choices: Choices | None = None) -> dict[str, dict[str, Any]]:
    """Every form's values from ``{form: {field: answer}}``; UiError lists every problem."""
    data: dict[str, dict[str, Any]] = {}
    problems = []
    unknown = set(answers) - {f.name for f in ui.forms}
    if unknown:
        raise UiError(f"{ui.filename}: answers for forms it does not have: "
                      f"{', '.join(sorted(unknown))}")
    for form in ui.forms:
        given = answers.get(form.name) or {}
        extra = set(given) - {f.name for f in form.fields} - {
            confirmation_name(f) for f in form.fields if f.type == "password"}
        if extra:
            problems += [f"{form.name}.{name}: the form has no such field"
                         for name in sorted(extra)]
        values, errors = clean_form(ui, form, given, data, choices)
        problems += [f"{form.name}{'.' + name if name else ''}: {message}"
                     for name, message in errors.items()]
        data[form.name] = values
    if problems:
        raise UiError(f"{ui.filename}: the answers do not pass", problems)
    return data


# -- the object model ----------------------------------------------------------------

def _add_ids(value: Any) -> Any:
    """Every object header (``?`` with a type) without an id gets a new one."""
    if isinstance(value, dict):
        header = value.get("?")
        if isinstance(header, dict) and "type" in header and not header.get("id"):
            header["id"] = uuid.uuid4().hex
        for item in value.values():
            _add_ids(item)
    elif isinstance(value, list):
        for item in value:
            _add_ids(item)
    return value


def _name_field(forms: list[Form]) -> Field | None:
    """The package's own name field (a string field ``name``): it names the application,
    so the form asks for the name once."""
    return next((f for form in forms for f in form.fields
                 if f.name == "name" and f.type == "string"), None)


def application_name(ui: UiDefinition, data: Mapping[str, Any]) -> str:
    """The name the environment lists the application by (2.2 and later): the added
    application name field, or the package's own name field."""
    if ui.version < (2, 2):
        return ""
    own = _name_field(ui.forms)
    if own is not None:
        return str((data.get(own.form) or {}).get(own.name) or "")
    return str((data.get(ui.forms[-1].name) or {}).get(APP_NAME_FIELD) or "")


def evaluate_application(ui: UiDefinition, data: Mapping[str, Mapping[str, Any]]) -> dict:
    """The ``Application`` template evaluated over cleaned answers: the object model of
    one application, with ids in its object headers."""
    name = application_name(ui, data)
    visible = {form: {k: v for k, v in values.items() if k != APP_NAME_FIELD}
               for form, values in data.items()}
    model = _Evaluation(ui, visible, name).evaluate(ui.application)
    if not isinstance(model, dict) or not isinstance(model.get("?"), dict) \
            or "type" not in model["?"]:
        raise UiError(f"{ui.filename}: Application does not evaluate to an object with a "
                      f"'?: {{type: ...}}' header")
    _add_ids(model)
    if name:
        # As the dashboard does: the object's own name (``name($this)``), and its copy
        # under the dashboard's key.
        model["?"]["name"] = name
        model["?"].setdefault(DASHBOARD_KEY, {})["name"] = name
    return model


def translate(text: str | bytes, answers: Mapping[str, Mapping[str, Any]],
              filename: str = "ui.yaml", app_name: str = "",
              choices: Choices | None = None,
              source: Callable[[str, str], Any] | None = None) -> dict:
    """The object model a UI definition and a user's answers make (what the wizard adds
    to the environment). ``source(class, method)`` calls a ``ParametersSource``."""
    ui = parse(text, filename, app_name)
    if ui.parameters_source is not None:
        if source is None:
            raise UiError(f"{filename}: ParametersSource {'.'.join(ui.parameters_source)} "
                          f"runs MuranoPL: ask murano-api (POST .../ui/model)")
        add_parameters(ui, source(*ui.parameters_source))
    return evaluate_application(ui, clean_all(ui, answers, choices))
