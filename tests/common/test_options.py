"""murano_common.options: the one typed INI loader, and the samples rendered from declarations."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from murano_common.options import ConfigError, Option, Schema, Section

ROOT = Path(__file__).resolve().parents[2]

#: Each committed sample and the module whose SCHEMA renders it (`make samples` rewrites them).
SAMPLES = {
    "murano_agent/packaging/agent.conf.sample": "murano_agent.config",
    "murano_engine/murano-engine.conf.sample": "murano_engine.engine.config",
    "murano_engine/api/murano-api.conf.sample": "murano_engine.backend.settings",
}

SCHEMA = Schema(
    Section("DEFAULT", "top", Option("debug", bool, False, "Debug.")),
    Section("local_cloud", "lc",
            Option("state_dir", str, "~/state", "State."),
            Option("parallel", int, 64, "Parallel."),
            Option("timeout", float, None, "Timeout (default: none).")),
    Section("local", "a section whose name starts another's",
            Option("cloud_state_dir", str, "", "Never matched by MURANO_LOCAL_CLOUD_...")),
    Section("extra", "free", Option("known", int, 1, "Known."), free_form=True),
    title="test",
)


@pytest.mark.parametrize(("sample", "module"), sorted(SAMPLES.items()))
def test_committed_samples_are_rendered_from_the_declarations(sample, module):
    schema = importlib.import_module(module).SCHEMA
    assert (ROOT / sample).read_text() == schema.sample(), f"{sample} is stale: run make samples"
    loaded = schema.load(ROOT / sample)
    assert {name: dict(values) for name, values in loaded.items()} == {
        name: dict(values) for name, values in schema.defaults().items()}


def test_sample_lists_every_option_with_help_and_default():
    text = SCHEMA.sample()
    assert "[local_cloud]\n# lc\n\n# State.\n#state_dir = ~/state\n" in text
    assert "# Parallel. (a whole number)\n#parallel = 64\n" in text
    assert "#timeout =\n" in text and "#debug = false\n" in text


def test_typed_values_by_attribute_and_by_name(tmp_path):
    path = tmp_path / "a.conf"
    path.write_text("[DEFAULT]\ndebug = yes\n[local_cloud]\nparallel = 3\ntimeout = 2.5\n"
                    "state_dir = '/q'\n[extra]\nAnything = goes\n")
    values = SCHEMA.load(path)
    assert values.debug is True and values["DEFAULT"]["debug"] is True
    assert values.local_cloud.parallel == 3 and values["local_cloud"]["timeout"] == 2.5
    assert values.local_cloud.state_dir == "/q"  # quotes are stripped, as oslo.config does
    assert dict(values.extra) == {"known": 1, "anything": "goes"}
    assert values.source == str(path)
    assert SCHEMA.load(text="[local_cloud]\ntimeout =\n").local_cloud.timeout is None


def test_environment_overrides_including_sections_with_underscores():
    values = SCHEMA.load(text="[local_cloud]\nparallel = 3\n", environ={
        "MURANO_LOCAL_CLOUD_STATE_DIR": "/env",
        "MURANO_LOCAL_CLOUD_PARALLEL": "9",
        "MURANO_DEFAULT_DEBUG": "on",
        "MURANO_LOCAL_CLOUD_NOSUCH": "x",  # names no option: another program's variable
        "MURANO_TEST_AMQP_URL": "x",
        "PATH": "/bin",
    })
    assert values.local_cloud.state_dir == "/env" and values.local_cloud.parallel == 9
    assert values.debug is True and values.local.cloud_state_dir == ""
    with pytest.raises(ConfigError, match=r"environment variable MURANO_LOCAL_CLOUD_PARALLEL "
                                          r"\[local_cloud\]: option 'parallel' = 'many' is not "
                                          r"a whole number"):
        SCHEMA.load(environ={"MURANO_LOCAL_CLOUD_PARALLEL": "many"})


def test_overrides_win_over_file_and_environment():
    values = SCHEMA.load(text="[local_cloud]\nparallel = 3\n",
                         environ={"MURANO_LOCAL_CLOUD_PARALLEL": "4"},
                         overrides={"local_cloud.parallel": 5, "debug": True})
    assert values.local_cloud.parallel == 5 and values.debug is True
    with pytest.raises(ConfigError, match="override 'nosuch.x': unknown section 'nosuch'"):
        SCHEMA.load(overrides={"nosuch.x": 1})


@pytest.mark.parametrize(("text", "message"), [
    ("[local_cloud]\nparallel = many\n",
     r"a\.conf \[local_cloud\]: option 'parallel' = 'many' is not a whole number"),
    ("[DEFAULT]\ndebug = maybe\n", r"a\.conf \[DEFAULT\]: option 'debug' = 'maybe' is not true "
                                   r"or false"),
    ("[local_cloud]\ntimeout = soon\n", r"a\.conf \[local_cloud\]: option 'timeout' = 'soon' "
                                        r"is not a number"),
    ("[local_cloud]\nstate_dri = /x\n", r"a\.conf \[local_cloud\]: unknown option 'state_dri'"),
    ("[local-cloud]\nstate_dir = /x\n", r"a\.conf: unknown section \[local-cloud\]"),
    ("[local_cloud]\nparallel = 1\nparallel = 2\n", r"a\.conf: not a valid INI file"),
    ("parallel = 1\n", r"a\.conf: not a valid INI file"),
])
def test_errors_name_the_file_section_and_option(tmp_path, text, message):
    path = tmp_path / "a.conf"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        SCHEMA.load(path)


def test_every_problem_is_reported_at_once():
    text = "[local_cloud]\nparallel = many\nstate_dri = /x\n[local-cloud]\nx = 1\n"
    environ = {"MURANO_LOCAL_CLOUD_TIMEOUT": "soon"}
    with pytest.raises(ConfigError) as refused:
        SCHEMA.load(text=text, name="a.conf", environ=environ, overrides={"nosuch.x": 1})
    assert refused.value.problems == [
        "a.conf [local_cloud]: option 'parallel' = 'many' is not a whole number",
        "a.conf [local_cloud]: unknown option 'state_dri'",
        "a.conf: unknown section [local-cloud]",
        "environment variable MURANO_LOCAL_CLOUD_TIMEOUT [local_cloud]: option 'timeout' = "
        "'soon' is not a number",
        "override 'nosuch.x': unknown section 'nosuch'"]
    assert str(refused.value) == "\n".join(refused.value.problems)
    assert refused.value.lines("murano-agent: ").splitlines()[2] == \
        "murano-agent: a.conf: unknown section [local-cloud]"


def test_unreadable_file():
    with pytest.raises(ConfigError, match="cannot read /nonexistent/a.conf: No such file"):
        SCHEMA.load("/nonexistent/a.conf")


def test_lenient_schema_ignores_what_it_does_not_declare():
    lenient = Schema(*SCHEMA.sections.values(), lenient=True)
    values = lenient.load(
        text="[DEFAULT]\nverbose = true\ndebug = 1\ndebug = 0\n[oslo_log]\nx = 1\n")
    assert values.debug is False and "verbose" not in values["DEFAULT"]
    with pytest.raises(ConfigError, match="option 'debug' = 'x'"):
        lenient.load(text="[DEFAULT]\ndebug = x\n")


def test_declarations_are_checked():
    with pytest.raises(TypeError, match="default 'x' is not a int"):
        Option("n", int, "x", "N.")
    with pytest.raises(TypeError, match="type must be"):
        Option("n", list, [], "N.")
    with pytest.raises(ValueError, match="declares option 'a' twice"):
        Section("s", "", Option("a", str, "", "A."), Option("a", str, "", "A."))
    merged = Schema(Section("s", "one", Option("a", str, "", "A.")),
                    Section("s", "two", Option("b", int, 0, "B.")))
    assert list(merged.sections["s"].options) == ["a", "b"]
    assert merged.load(text="[s]\nb = 2\n").s.b == 2
