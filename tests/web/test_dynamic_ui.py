"""The dynamic UI format (Murano's appdev guide, "Dynamic UI definition specification"):
every field type, attribute and validator, and the Application template's evaluation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from murano_engine.web import dynamic_ui as ui

REPO = Path(__file__).resolve().parents[2]


def one_field(spec: str, version: str = "2.3", extra_forms: str = "") -> ui.UiDefinition:
    text = (f"Version: {version}\nApplication:\n  ?: {{type: com.example.App}}\n"
            f"  value: $.f.x\nForms:\n  - f:\n      fields:\n"
            + "".join(f"        {line}\n" for line in spec.strip().splitlines()) + extra_forms)
    return ui.parse(text, "t.yaml", app_name="app")


def clean(spec: str, raw, version: str = "2.3", **kwargs):
    definition = one_field(spec, version)
    return ui.clean_field(definition, definition.forms[0].fields[0], raw, {}, **kwargs)


def error(spec: str, raw, version: str = "2.3", **kwargs) -> str:
    with pytest.raises(ValueError) as caught:
        clean(spec, raw, version, **kwargs)
    return str(caught.value)


# -- field types -------------------------------------------------------------------------

def test_string_strips_and_checks_lengths():
    spec = "- {name: x, type: string, minLength: 2, maxLength: 4}"
    assert clean(spec, "  ab ") == "ab"
    assert "at least 2" in error(spec, "a")
    assert "at most 4" in error(spec, "abcde")


def test_text_is_a_string_on_several_lines():
    assert clean("- {name: x, type: text}", "one\ntwo") == "one\ntwo"


def test_required_by_default_and_its_message():
    assert error("- {name: x, type: string}", "") == ui.REQUIRED
    spec = "- {name: x, type: string, errorMessages: {required: Say something}}"
    assert error(spec, "  ") == "Say something"
    assert clean("- {name: x, type: string, required: false}", "") == ""
    assert clean("- {name: x, type: integer, required: false}", "") is None


def test_integer_parses_and_checks_bounds():
    spec = "- {name: x, type: integer, minValue: 1, maxValue: 32}"
    assert clean(spec, "7") == 7 and clean(spec, 32) == 32
    assert error(spec, "seven") == "Enter a whole number."
    assert "greater than or equal to 1" in error(spec, "0")
    assert "less than or equal to 32" in error(spec, 33)
    invalid = "- {name: x, type: integer, errorMessages: {invalid: A count please}}"
    assert error(invalid, "many") == "A count please"


def test_boolean_is_never_required():
    spec = "- {name: x, type: boolean, required: true}"
    assert clean(spec, "") is False and clean(spec, "on") is True and clean(spec, True) is True


def test_floatingip_is_the_old_boolean():
    assert clean("- {name: x, type: floatingip}", "on") is True
    assert clean("- {name: x, type: floatingip}", None) is False


def test_password_default_strength_and_length():
    spec = "- {name: p, type: password}"
    assert clean(spec, "Passw0rd!") == "Passw0rd!"
    assert "at least 7" in error(spec, "Pa0!")
    assert "upper-case" in error(spec, "password1!")


def test_password_confirmation_must_match():
    spec = "- {name: p, type: password}"
    assert error(spec, "Passw0rd!", confirmation="Passw0rd?") == "The passwords do not match."
    definition = one_field(spec)
    values, errors = ui.clean_form(definition, definition.forms[0],
                                   ui.browser_answers({"p": "Passw0rd!"}), {})
    assert errors["p"] == "The passwords do not match."
    values, errors = ui.clean_form(definition, definition.forms[0], ui.browser_answers(
        {"p": "Passw0rd!", "p-clone": "Passw0rd!"}), {})
    assert not errors and values["p"] == "Passw0rd!"


def test_password_confirm_input_false_needs_no_confirmation():
    assert clean("- {name: p, type: password, confirmInput: false}", "Passw0rd!",
                 confirmation="other") == "Passw0rd!"


def test_password_own_validator_replaces_strength_from_2_3():
    spec = "- {name: p, type: password, regexpValidator: '^[a-z0-9]{5,50}$'}"
    assert clean(spec, "simple5") == "simple5"
    assert error(spec, "Not OK!") == ui.INVALID
    # before 2.3 the validators of a password are ignored: the default rule holds
    assert "upper-case" in error(spec, "simple5", version="2.2")


def test_choice_as_pairs_and_as_mapping_from_2_4():
    pairs = "- {name: x, type: choice, choices: [[a, Alpha], [b, Beta]]}"
    assert clean(pairs, "b") == "b"
    assert "not one of the available choices" in error(pairs, "c")
    mapping = "- {name: x, type: choice, choices: {a: Alpha, b: Beta}}"
    assert one_field(mapping, "2.4").forms[0].fields[0].choices == [("a", "Alpha"),
                                                                    ("b", "Beta")]
    assert clean(mapping, "a", "2.4") == "a"


def test_clusterip_is_an_ipv4_address():
    assert clean("- {name: x, type: clusterip}", "10.0.0.5") == "10.0.0.5"
    assert error("- {name: x, type: clusterip}", "10.0.0.300") == "Enter a valid IPv4 address."


def test_databaselist_is_a_list_of_identifiers():
    spec = "- {name: x, type: databaselist}"
    assert clean(spec, "db1, _two,t$3") == ["db1", "_two", "t$3"]
    assert "Latin letter" in error(spec, "ok, 9bad")
    assert clean("- {name: x, type: databaselist, required: false}", "") == []


@pytest.mark.parametrize("kind", ["flavor", "image", "keypair", "azone", "securitygroup",
                                  "volume"])
def test_cloud_fields_take_one_of_the_clouds_choices(kind):
    spec = f"- {{name: x, type: {kind}}}"
    listed = {kind: [("one", "One"), ("two", "Two")]}
    assert clean(spec, "two", choices=lambda f: listed[f.type]) == "two"
    assert "not one of the available" in error(spec, "three",
                                               choices=lambda f: listed[f.type])
    assert clean(spec, "any") == "any"  # nobody to list them: taken as given
    assert error(spec, "") == ui.REQUIRED


def test_network_is_a_network_and_subnet_pair_with_auto():
    spec = "- {name: n, type: network}"
    assert clean(spec, "net1,sub1") == ["net1", "sub1"]
    assert clean(spec, ["net1", "sub1"]) == ["net1", "sub1"]
    assert clean(spec, "") == [None, None]  # "Auto": the environment's network
    assert error("- {name: n, type: network, allow_auto: false}", "") == ui.REQUIRED
    assert "not one of" in error(spec, "net9,sub9", choices=lambda f: [("net1,sub1", "x")])
    with pytest.raises(ui.UiError, match="need Version 2.1"):
        one_field(spec, "2.0")


def test_an_application_field_picks_an_object_of_that_class():
    spec = "- {name: dc, type: io.murano.windows.ActiveDirectory, required: false}"
    assert clean(spec, "abc123", choices=lambda f: [("abc123", "corp")]) == "abc123"
    assert clean(spec, "") is None
    assert one_field(spec).forms[0].fields[0].is_application


def test_unknown_field_type_names_the_line():
    with pytest.raises(ui.UiError, match=r"t\.yaml:\d+:\d+: field f\.x has the unknown type"):
        one_field("- {name: x, type: str ing}")


# -- attributes and validators ---------------------------------------------------------

def test_label_defaults_to_the_name_capitalized():
    definition = one_field("- {name: unit_pattern, type: string}")
    assert definition.forms[0].fields[0].label == "Unit pattern"


def test_hidden_fields_take_their_initial_value():
    definition = one_field("- {name: x, type: integer, hidden: true, initial: 3}")
    values, errors = ui.clean_form(definition, definition.forms[0], {"x": "99"}, {})
    assert values["x"] == 3 and not errors


def test_initial_is_used_when_there_is_no_answer_and_may_read_earlier_forms():
    later = "  - g:\n      fields:\n        - {name: y, type: string, initial: $.f.x + '-2'}\n"
    definition = one_field("- {name: x, type: string, initial: hi}", extra_forms=later)
    data = ui.clean_all(definition, {})
    assert data["f"] == {"x": "hi"} and data["g"]["y"] == "hi-2"


def test_regexp_validator_and_its_invalid_message():
    spec = ("- {name: x, type: string, regexpValidator: '^[a-z]+$', "
            "errorMessages: {invalid: Lower-case letters only}}")
    assert clean(spec, "abc") == "abc"
    assert error(spec, "aBc") == "Lower-case letters only"


def test_validators_regexp_and_yaql_on_the_value_with_their_messages():
    spec = """
- name: x
  type: string
  validators:
    - expr: {regexpValidator: '^[^.]{1,15}(\\..*)?$'}
      message: NetBIOS part too long
    - expr: $.len() > 3
      message: Too short for a domain
"""
    assert clean(spec, "corp.local") == "corp.local"
    assert error(spec, "averyverylongnetbios.local") == "NetBIOS part too long"
    assert error(spec, "a.b") == "Too short for a domain"


def test_form_validators_see_every_form():
    definition = ui.parse("""
Version: 2
Application: {?: {type: com.example.App}}
Forms:
  - f:
      fields:
        - {name: count, type: integer}
        - {name: pattern, type: string, required: false}
      validators:
        - expr: $.f.count < 2 or not $.f.pattern.bool() or '#' in $.f.pattern
          message: Put '#' in the pattern
""", "t.yaml")
    values, errors = ui.clean_form(definition, definition.forms[0],
                                   {"count": "3", "pattern": "dc"}, {})
    assert errors == {"": "Put '#' in the pattern"}
    values, errors = ui.clean_form(definition, definition.forms[0],
                                   {"count": "3", "pattern": "dc#"}, {})
    assert not errors


def test_versions_read_and_refused():
    assert one_field("- {name: x, type: string}", "2").version == (2, 0)
    for bad in ("1.0", "3.0", "2.5", "two"):
        with pytest.raises(ui.UiError, match="Version"):
            one_field("- {name: x, type: string}", bad)


def test_bad_definitions_name_the_problem():
    with pytest.raises(ui.UiError, match="Application section is required"):
        ui.parse("Forms: [{f: {fields: []}}]", "t.yaml")
    with pytest.raises(ui.UiError, match="Forms is required"):
        ui.parse("Application: {?: {type: a.B}}", "t.yaml")
    with pytest.raises(ui.UiError, match="two fields named 'x'"):
        one_field("- {name: x, type: string}\n- {name: x, type: integer}")


def test_answers_for_unknown_fields_are_refused():
    definition = one_field("- {name: x, type: string}")
    with pytest.raises(ui.UiError, match=r"f\.y: the form has no such field"):
        ui.clean_all(definition, {"f": {"x": "a", "y": "b"}})


# -- the Application template ----------------------------------------------------------

APP = """
Version: 2.2
Templates:
  server:
    ?: {type: io.murano.resources.LinuxMuranoInstance}
    name: generateHostname($.conf.pattern, $index)
    flavor: $.conf.flavor
  shared:
    ?: {type: com.example.Volume}
    size: 1
Application:
  ?: {type: com.example.Cluster}
  title: $.conf.title
  label: "$.conf.title"
  total: $.conf.count * 10
  servers: repeat($server, $.conf.count)
  plain: just words
  appName: name()
  random: generateHostname('', 1)
  other: randomName()
Forms:
  - conf:
      fields:
        - {name: title, type: string}
        - {name: count, type: integer}
        - {name: pattern, type: string, required: false}
        - {name: flavor, type: flavor}
"""


def test_application_is_evaluated_over_the_answers():
    model = ui.translate(APP, {"conf": {"title": "T", "count": "2", "pattern": "node-#",
                                        "flavor": "m1.small", "application_name": "My app"}})
    assert model["?"]["type"] == "com.example.Cluster"
    assert re.fullmatch(r"[0-9a-f]{32}", model["?"]["id"])
    assert model["?"][ui.DASHBOARD_KEY] == {"name": "My app"}
    assert model["?"]["name"] == "My app"  # the object's name: name($this)
    assert model["title"] == "T" and model["total"] == 20
    assert model["label"] == "$.conf.title"  # quoted: a string, not an expression
    assert model["plain"] == "just words" and model["appName"] == "My app"
    assert [s["name"] for s in model["servers"]] == ["node-1", "node-2"]
    assert all(s["flavor"] == "m1.small" for s in model["servers"])
    ids = {s["?"]["id"] for s in model["servers"]}
    assert len(ids) == 2  # every template use is an object of its own
    assert re.fullmatch(r"[a-z]{5}[0-9a-z]+", model["random"])
    assert re.fullmatch(r"[a-z][0-9a-f]{11}", model["other"])


def test_generate_hostname_without_pattern_gives_different_names():
    assert ui.generate_hostname("web-#", 3) == "web-3"
    assert ui.generate_hostname("", 1) != ui.generate_hostname("", 1)


def test_ref_makes_one_object_and_refers_to_it_from_2_4():
    model = ui.translate("""
Version: 2.4
Parameters:
  size: 5
Templates:
  disk:
    ?: {type: com.example.Volume}
    size: $size
Application:
  ?: {type: com.example.App}
  first: ref(disk)
  second: ref(disk)
  third: ref(disk, other, true)
Forms:
  - f:
      fields: []
""", {})
    assert model["first"]["size"] == 5
    assert model["second"] == model["first"]["?"]["id"]
    assert model["third"] != model["second"] and isinstance(model["third"], str)


def test_before_2_2_there_is_no_application_name_field():
    definition = ui.parse(APP.replace("Version: 2.2", "Version: 2.1"), "t.yaml")
    assert ui.APP_NAME_FIELD not in [f.name for f in definition.forms[-1].fields]


def test_a_failing_expression_names_itself():
    text = APP.replace("title: $.conf.title", "title: $.conf.title.noSuchFunction()")
    with pytest.raises(ui.UiError, match=r"expression '\$\.conf\.title\.noSuchFunction\(\)' "
                                         r"\(ui\.yaml:\d+:\d+\) failed"):
        ui.translate(text, {"conf": {"title": "T", "count": "1", "flavor": "f"}})


@pytest.mark.parametrize("package", sorted(p.name for p in (REPO / "dsl_packages").iterdir()
                                           if (p / "UI" / "ui.yaml").exists()))
def test_the_repositorys_packages_ui_definitions_read(package):
    definition = ui.parse((REPO / "dsl_packages" / package / "UI" / "ui.yaml").read_text(),
                          f"{package}/UI/ui.yaml")
    assert definition.forms and definition.version[0] == 2


def test_replicated_kv_answers_make_the_readme_model():
    text = (REPO / "dsl_packages/io.murano.apps.linux.ReplicatedKV/UI/ui.yaml").read_text()
    model = ui.translate(text, {"appConfiguration": {"name": "kv", "nodeCount": 2},
                                "instanceConfiguration": {"osImage": "debian",
                                                          "flavor": "m1.small"}})
    assert {k: model[k] for k in ("name", "nodeCount", "basePort", "image", "flavor")} == {
        "name": "kv", "nodeCount": 2, "basePort": 18700, "image": "debian",
        "flavor": "m1.small"}


def test_json_answers_may_be_typed():
    assert clean("- {name: x, type: string}", 12) == "12"
    assert clean("- {name: x, type: integer}", 5) == 5
    assert clean("- {name: x, type: choice, choices: [['1', one]]}", 1) == "1"
    assert clean("- {name: x, type: boolean}", True) is True


def test_attributes_may_be_expressions_over_earlier_answers_from_2_4():
    later = ("  - g:\n      fields:\n        - {name: y, type: string, label: $.f.x + ' label',"
             " helpText: $.f.x, required: $.f.x = 'strict'}\n")
    definition = one_field("- {name: x, type: string}", "2.4", later)
    spec = definition.forms[1].fields[0]
    data = {"f": {"x": "strict"}}
    assert ui.attribute(definition, spec.label, data) == "strict label"
    assert ui.attribute(definition, spec.help_text, data) == "strict"
    _, errors = ui.clean_form(definition, definition.forms[1], {"y": ""}, data)
    assert errors == {"y": ui.REQUIRED}
    _, errors = ui.clean_form(definition, definition.forms[1], {"y": ""}, {"f": {"x": "lax"}})
    assert errors == {}


SOURCED = """
Version: 2.4
ParametersSource: {source}
Application:
  ?: {{type: com.example.App}}
  size: $size
Forms:
  - f:
      fields: []
"""


def test_parameters_source_names_a_static_method_of_the_application_by_default():
    definition = ui.parse(SOURCED.format(source="uiParams"), "t.yaml")
    assert definition.parameters_source == ("com.example.App", "uiParams")
    definition = ui.parse(SOURCED.format(source="com.example.Other.params"), "t.yaml")
    assert definition.parameters_source == ("com.example.Other", "params")


def test_parameters_source_results_join_the_parameters():
    calls = []

    def source(class_name: str, method: str) -> dict:
        calls.append((class_name, method))
        return {"size": 3}

    model = ui.translate(SOURCED.format(source="uiParams"), {}, source=source)
    assert model["size"] == 3 and calls == [("com.example.App", "uiParams")]
    with pytest.raises(ui.UiError, match="runs MuranoPL"):
        ui.translate(SOURCED.format(source="uiParams"), {})
    with pytest.raises(ui.UiError, match="returned list, not a mapping"):
        ui.translate(SOURCED.format(source="uiParams"), {}, source=lambda c, m: [1])


def test_a_package_with_its_own_name_field_is_asked_the_name_once():
    text = (REPO / "dsl_packages" / "io.murano.apps.linux.ReplicatedKV" / "UI" /
            "ui.yaml").read_text()
    definition = ui.parse(text, "ui.yaml", "Replicated key-value store")
    names = [f.name for form in definition.forms for f in form.fields]
    assert ui.APP_NAME_FIELD not in names and names.count("name") == 1
    model = ui.translate(text, {
        "appConfiguration": {"name": "store", "nodeCount": "2", "basePort": "18700"},
        "instanceConfiguration": {"osImage": "debian-12", "flavor": "m1.small"}})
    assert model["name"] == "store" and model["?"][ui.DASHBOARD_KEY] == {"name": "store"}
