"""HOT packages (``Format: Heat.HOT/1.0``): a Heat template the catalog turns into a class.

The package holds ``template.yaml`` (a Heat Orchestration Template), optional
``Resources/HotFiles/`` (files the template reaches with ``get_file`` or as
nested templates), optional ``Resources/HotEnvironments/`` (Heat environment
files) and an optional UI. As in Murano, the package has one class, named as
the package, extending ``io.murano.Application``, with the properties

* ``name`` (In, a string, required),
* ``templateParameters`` (In): the template's parameters, each with the
  contract its type and constraints make (``string`` -> ``$.string()``,
  ``number`` -> ``$.int()``, ``boolean`` -> ``$.bool()``; ``json`` and
  ``comma_delimited_list`` values pass as they are, and the cloud checks their
  constraints; ``length``, ``range``, ``allowed_values`` and ``allowed_pattern``
  become ``check()``s with the constraint's description as the message; a
  parameter without a default must be given). With environment files the
  parameters are not checked, as an environment may supply them;
* ``hotEnvironment`` (In): the name of a file in ``HotEnvironments/`` to
  deploy with;
* ``templateOutputs`` (Out): each output of the stack, as Heat returns it;
* ``generatedHeatStackName`` (Out): the stack's name.

``deploy`` pushes the template as a stack of the application's own, named
``<random name>_<environment id>`` on first deployment and kept (an
attribute) for updates; parameters left null take the template's defaults.
Destroying the application deletes its stack.
"""

from __future__ import annotations

import re

from murano_engine.dsl.errors import LoadError, LoadErrors, Position
from murano_engine.dsl.expressions import parse, try_parse
from murano_engine.dsl.yaml_loader import SourceMap, load_documents, load_plain, position_of

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

FORMAT_NAME = "Heat.HOT"
FORMAT = f"{FORMAT_NAME}/1.0"
TEMPLATE = "template.yaml"
HOT_FILES = "Resources/HotFiles/"
HOT_ENVIRONMENTS = "Resources/HotEnvironments/"
_TYPES = ("string", "number", "boolean", "json", "comma_delimited_list")
_CONSTRAINTS = ("length", "range", "allowed_values", "allowed_pattern", "custom_constraint")
#: the parameter types a constraint applies to (as Heat has it)
_APPLIES = {"length": ("string", "json", "comma_delimited_list"), "range": ("number",),
            "allowed_pattern": ("string",)}
#: the types whose constraints become contracts; for the others (a list or a map, or their
#: text) the cloud checks the constraints
_CHECKED = ("string", "number", "boolean")

# The generated class's namespaces and methods (its name, parent and properties are
# added in code). TEMPLATE_RESOURCE is the resource name of the template (the class's
# name, as in Murano) and $files is filled with the package's HotFiles.
_METHODS = """
Namespaces:
  =: io.murano
  sys: io.murano.system
Methods:
  deploy:
    Body:
      - $environment: $this.find(Environment).require()
      - $reporter: $environment.reporter
      - $stackName: $.getAttr(generatedHeatStackName)
      - If: $stackName = null
        Then:
          - $stackName: format('{0}_{1}', randomName(), id($environment))
          - $.setAttr(generatedHeatStackName, $stackName)
      - $stack: new(sys:HeatStack, name => $stackName,
          description => format('Application {0}', $.name))
      - $.generatedHeatStackName: $stack.name()
      - $reporter.report($this, format('Deploying {0} as stack {1}', $.name, $stack.name()))
      - $resources: new(sys:Resources)
      - $stack.setTemplate($resources.yaml(TEMPLATE_RESOURCE))
      - $given: $.templateParameters.items().where($[1] != null)
      - $stack.setParameters(dict($given))
      - $files: {}
      - $stack.setFiles($files)
      - If: $.hotEnvironment
        Then:
          - $stack.setHotEnvironment($resources.yaml('HotEnvironments/' + $.hotEnvironment))
      - Try:
          - $stack.push()
        Catch:
          - As: e
            Do:
              - $reporter.reportError($this, format('Stack {0} failed - {1}',
                  $stack.name(), $e.message))
              - Rethrow:
      - $.templateOutputs: $stack.output()
      - $.reportDeployed(title => format('{0} (stack {1})', $.name, $stack.name()))
  destroy:
    Body:
      - $stackName: $.getAttr(generatedHeatStackName)
      - If: $stackName != null
        Then:
          - new(sys:HeatStack, name => $stackName).delete()
          - $.reportDestroyed()
"""


def is_hot_format(value: Any) -> bool:
    """Whether a manifest's ``Format`` names a HOT package."""
    return str(value or "").partition("/")[0] == FORMAT_NAME


def read_template(data: bytes, where: str, validate: bool = True) -> dict:
    """``template.yaml`` read and checked; every problem names its file and line.

    ``validate`` False (a package with environment files) skips checking the
    parameters' types and constraints, which then make no contracts.
    """
    template = load_plain(data, where)
    if not isinstance(template, dict):
        raise LoadError("a HOT template must be a mapping", file=where)
    problems = []
    top = position_of(template)
    if "heat_template_version" not in template:
        problems.append(LoadError("heat_template_version is missing", top))
    if not isinstance(template.get("resources"), dict):
        problems.append(LoadError("not a HOT template: resources must be a mapping", top))
    for section in ("parameters", "outputs"):
        if template.get(section) is not None and not isinstance(template[section], dict):
            problems.append(LoadError(f"{section} must be a mapping", top))
    if validate and isinstance(template.get("parameters"), dict):
        for name, decl in template["parameters"].items():
            problems += _parameter_problems(str(name), decl, position_of(decl) or top)
    if problems:
        raise LoadErrors(problems)
    return template


def _parameter_problems(name: str, decl: Any, where: Position | None) -> list[LoadError]:
    if not isinstance(decl, dict):
        return [LoadError(f"parameter {name!r} must be a mapping", where)]
    if decl.get("type") not in _TYPES:
        return [LoadError(f"parameter {name!r}: type must be one of {', '.join(_TYPES)}, "
                          f"not {decl.get('type')!r}", where)]
    constraints = decl.get("constraints") or []
    if not isinstance(constraints, list):
        return [LoadError(f"parameter {name!r}: constraints must be a list", where)]
    problems = []
    for constraint in constraints:
        here = position_of(constraint) or where
        kinds = [k for k in _CONSTRAINTS if isinstance(constraint, dict) and k in constraint]
        if len(kinds) != 1:
            problems.append(LoadError(f"parameter {name!r}: a constraint needs one of "
                                      f"{', '.join(_CONSTRAINTS)}", here))
            continue
        value = constraint[kinds[0]]
        applies = _APPLIES.get(kinds[0])
        if applies and decl["type"] not in applies:
            problems.append(LoadError(f"parameter {name!r}: {kinds[0]} applies to "
                                      f"{' and '.join(applies)} parameters only", here))
        elif kinds[0] in ("length", "range"):
            if not isinstance(value, dict) or not value or set(value) - {"min", "max"} or any(
                    not _is_number(v) for v in value.values()):
                problems.append(LoadError(f"parameter {name!r}: {kinds[0]} takes numbers "
                                          f"min and/or max", here))
        elif kinds[0] == "allowed_values":
            if not isinstance(value, list) or not value or any(
                    not isinstance(v, (str, int, float)) for v in value):
                problems.append(LoadError(f"parameter {name!r}: allowed_values must be a "
                                          f"list of strings and numbers", here))
        elif kinds[0] == "allowed_pattern":
            import regex  # here: only HOT packages with patterns pay for importing it
            try:
                regex.compile(str(value))
            except regex.error as exc:
                problems.append(LoadError(f"parameter {name!r}: allowed_pattern {value!r} "
                                          f"is not a regular expression: {exc}", here))
    return problems


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- the generated class --------------------------------------------------------

def class_document(name: str, template: dict, hot_files: list[str], validate: bool,
                   where: str) -> dict:
    """The generated class ``name`` as a class document (with parsed expressions)."""
    text = _METHODS.replace("TEMPLATE_RESOURCE", quote(name))
    [doc] = load_documents(text, f"<class {name} generated from {where}>", try_parse)
    top = position_of(template)
    doc["Name"] = name
    doc["Extends"] = "io.murano.Application"
    parameters = template.get("parameters") or {}
    contracts = SourceMap(position=top)
    if validate:
        for key, decl in parameters.items():
            contracts[str(key)] = parse(parameter_contract(str(key), decl),
                                        position_of(decl) or top)
    outputs = SourceMap({str(k): parse("$", top) for k in template.get("outputs") or {}},
                        position=top)
    doc["Properties"] = SourceMap({
        "name": _property("$.string().notNull()", "In", top),
        "templateParameters": _property(contracts, "In", top, default={}),
        "hotEnvironment": _property("$.string()", "In", top),
        "templateOutputs": _property(outputs, "Out", top, default={}),
        "generatedHeatStackName": _property("$.string()", "Out", top),
    }, position=top)
    files = SourceMap({path: parse(f"$resources.string({quote('HotFiles/' + path)})", top)
                       for path in hot_files}, position=top)
    for step in doc["Methods"]["deploy"]["Body"]:
        if isinstance(step, dict) and [str(k) for k in step] == ["$files"]:
            step[next(iter(step))] = files
    return doc


def missing_files(template: dict, hot_files: list[str], where: str) -> list[LoadError]:
    """A problem for each ``get_file`` of the template that names no file of the package's
    ``Resources/HotFiles/`` (the only files the stack is given: Heat would refuse it)."""
    known = set(hot_files)
    problems: list[LoadError] = []
    stack: list[Any] = [template]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            target = node.get("get_file") if len(node) == 1 else None
            if target is not None and str(target) not in known:
                shown = ", ".join(sorted(known)) or "none"
                problems.append(LoadError(
                    f"get_file {str(target)!r} is not a file of the package's "
                    f"Resources/HotFiles/ (it has: {shown})", position_of(node),
                    file=None if position_of(node) else where))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return sorted(problems, key=lambda p: (p.position or (where, 0, 0))[1:])


def _property(contract: Any, usage: str, where: Position | None,
              default: Any = None) -> SourceMap:
    decl = SourceMap({"Contract": parse(contract, where) if isinstance(contract, str)
                      else contract, "Usage": usage}, position=where)
    if default is not None:
        decl["Default"] = default
    return decl


def parameter_contract(name: str, decl: dict) -> str:
    """The contract expression of one template parameter."""
    kind = decl["type"]
    numbers = [decl.get("default")] + [
        v for c in decl.get("constraints") or [] for v in (c.get("range") or {}).values()]
    if kind == "number" and any(isinstance(v, float) for v in numbers):
        text = f"$.check($ = null or isNumber($), {quote(f'{name} must be a number')})"
    else:
        text = {"string": "$.string()", "number": "$.int()", "boolean": "$.bool()"}.get(kind, "$")
    for constraint in decl.get("constraints") or [] if kind in _CHECKED else []:
        predicate, message = _constraint(name, constraint)
        if predicate is not None:
            text += f".check($ = null or ({predicate}), {quote(message)})"
    if "default" not in decl:
        text += ".notNull()"
    return text


def _constraint(name: str, constraint: dict) -> tuple[str | None, str]:
    """A constraint as a yaql predicate on ``$`` and the message when it fails."""
    described = constraint.get("description")
    if "length" in constraint or "range" in constraint:
        kind = "length" if "length" in constraint else "range"
        bounds = constraint[kind]
        subject = "len($)" if kind == "length" else "$"
        tests = [f"{subject} >= {bounds['min']!r}"] if "min" in bounds else []
        tests += [f"{subject} <= {bounds['max']!r}"] if "max" in bounds else []
        what = "length" if kind == "length" else "value"
        limits = " and ".join(f"{'at least' if k == 'min' else 'at most'} {v}"
                              for k, v in bounds.items())
        return " and ".join(tests), described or f"{name}: the {what} must be {limits}"
    if "allowed_values" in constraint:
        values = constraint["allowed_values"]
        listed = ", ".join(quote(v) if isinstance(v, str) else repr(v) for v in values)
        return (f"$ in list({listed})",
                described or f"{name} must be one of {', '.join(map(str, values))}")
    if "allowed_pattern" in constraint:
        pattern = str(constraint["allowed_pattern"])
        whole = "^(?:" + pattern + r")\Z"  # Heat matches the whole value
        return f"$ =~ {quote(whole)}", described or f"{name} must match {pattern}"
    return None, ""  # custom_constraint: the cloud checks it


def quote(text: str) -> str:
    """``text`` as a single-quoted yaql string."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# -- the generated UI -------------------------------------------------------------

class _Yaql(str):
    """A UI value written as a yaql expression (``!yaql``)."""


def _dump_ui(ui: dict) -> str:
    """The UI as YAML, ``_Yaql`` values tagged ``!yaql`` (PyYAML imported on first use)."""
    from murano_common.pyyaml import import_yaml
    yaml = import_yaml()

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(_Yaql, lambda dumper, value: dumper.represent_scalar("!yaql", value))
    # a plain scalar that is no plain word is read back as yaql (``db-password``): quoted
    Dumper.add_representer(str, lambda dumper, value: dumper.represent_scalar(
        "tag:yaml.org,2002:str", value,
        style=None if _PLAIN_WORD.fullmatch(value) else "'"))
    return yaml.dump(ui, Dumper=Dumper, sort_keys=False, allow_unicode=True)


_PLAIN_WORD = re.compile(r"[\w. ]*")


def ui_definition(name: str, version: str, description: str | None, template: dict) -> str:
    """A dynamic UI (format 2) for the generated class: the application's name, then one
    form per parameter group (and one for the parameters in none)."""
    parameters = template.get("parameters") or {}
    groups: list[list[str]] = []
    for group in template.get("parameter_groups") or []:
        listed = [str(p) for p in (group or {}).get("parameters") or [] if p in parameters]
        if listed:
            groups.append(listed)
    grouped = {p for group in groups for p in group}
    rest = [str(p) for p in parameters if p not in grouped]
    if rest:
        groups.append(rest)
    forms = [{"appConfiguration": {"fields": [
        {"name": "title", "type": "string", "required": False, "hidden": True,
         "description": description or name},
        {"name": "name", "type": "string", "label": "Application Name",
         "description": "A name for the application: letters, digits and dashes",
         "initial": name.rpartition(".")[2]},
    ]}}]
    values: dict[str, Any] = {}
    taken: set[str] = set()
    for index, group in enumerate(groups, 1):
        fields = []
        for parameter in group:
            field = _field(_field_name(parameter, taken), parameters[parameter])
            field.setdefault("label", _title(parameter))
            fields.append(field)
            values[parameter] = _Yaql(f"$.group{index}.{field['name']}")
        forms.append({f"group{index}": {"fields": fields}})
    application = {"?": {"type": name, "package": name, "classVersion": version},
                   "name": _Yaql("$.appConfiguration.name")}
    if values:
        application["templateParameters"] = values
    ui = {"Version": 2, "Application": application, "Forms": forms}
    return _dump_ui(ui)


def _field_name(parameter: str, taken: set[str]) -> str:
    """A form field's name for a template parameter: a dynamic UI reads a name that is
    not a plain word as yaql (``db-password`` is ``db - password``), so other
    characters become ``_``; unique among the fields (``taken``)."""
    name = re.sub(r"\W", "_", parameter)
    if not name or name[0].isdigit():
        name = f"p_{name}"
    chosen, number = name, 2
    while chosen in taken:
        chosen, number = f"{name}_{number}", number + 1
    taken.add(chosen)
    return chosen


def _field(name: str, decl: Any) -> dict[str, Any]:
    if _parameter_problems(name, decl, None):  # not checked (environment files): plain
        return {"name": name, "type": "string", "label": _title(name), "required": False}
    kind = {"number": "integer", "boolean": "boolean"}.get(decl.get("type"), "string")
    field: dict[str, Any] = {"name": name, "type": kind,
                             "label": decl.get("label") or _title(name)}
    if decl.get("description"):
        field["description"] = decl["description"]
    if "default" in decl:
        field.update(initial=decl["default"], required=False)
    else:
        field["required"] = True
    if decl.get("hidden") and kind == "string":
        field["type"] = "password"
    validators = []
    for constraint in decl.get("constraints") or [] if decl["type"] in _CHECKED else []:
        if "length" in constraint and kind in ("string", "password"):
            bounds = constraint["length"]
            field.update({key: bounds[k] for k, key in (("min", "minLength"),
                                                         ("max", "maxLength")) if k in bounds})
            continue
        predicate, message = _constraint(name, constraint)
        if "allowed_pattern" in constraint:
            validators.append({"expr": {"regexpValidator":
                                        f"^(?:{constraint['allowed_pattern']})$"},
                               "message": message})
        elif predicate is not None:
            validators.append({"expr": _Yaql(predicate), "message": message})
    if validators:
        field["validators"] = validators
    return field


def _title(name: str) -> str:
    return re.sub(r"[_-]+", " ", name).strip().capitalize() or name

