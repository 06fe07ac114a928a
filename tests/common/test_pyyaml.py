"""murano_common.pyyaml: PyYAML imported with its reader's character class primed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from murano_common.pyyaml import NON_PRINTABLE, PYYAML_NON_PRINTABLE

REPO = Path(__file__).resolve().parents[2]


def _printed_by(code: str) -> str:
    """What ``code`` prints in a fresh interpreter (nothing imported before it)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, check=True)
    return done.stdout.strip()


def test_both_spellings_match_the_same_characters():
    every = "".join(map(chr, range(0x110000)))
    found = re.compile(NON_PRINTABLE).findall(every)
    assert found == re.compile(PYYAML_NON_PRINTABLE).findall(every)
    assert "\x07" in found and "\ufffe" in found and "\x85" not in found and "é" not in found


def test_pyyaml_writes_the_class_as_this_module_says():
    # PyYAML imported plainly: its own pattern. Should PyYAML ever change it, priming
    # would stop working silently: this test says so.
    assert _printed_by("import yaml; print(ascii(yaml.reader.Reader.NON_PRINTABLE.pattern))") \
        == ascii(PYYAML_NON_PRINTABLE)


def test_import_yaml_hands_pyyaml_the_primed_pattern_and_the_reader_still_refuses():
    printed = _printed_by(
        "from murano_common.pyyaml import import_yaml\n"
        "yaml = import_yaml()\n"
        "print(ascii(yaml.reader.Reader.NON_PRINTABLE.pattern))\n"
        "try:\n"
        "    yaml.load('a: b\\x07', Loader=yaml.SafeLoader)\n"
        "except yaml.reader.ReaderError as exc:\n"
        "    print(exc.character == 7, exc.position)\n"
        "print(yaml.load('a: \\u00e9', Loader=yaml.SafeLoader) == {'a': '\\u00e9'})\n")
    assert printed.splitlines() == [ascii(NON_PRINTABLE), "True 4", "True"]


def test_the_agent_primes_it_before_kombu_imports_pyyaml():
    assert _printed_by("import murano_agent.service, sys\n"
                       "print('yaml' in sys.modules)\n"
                       "print(ascii(sys.modules['yaml'].reader.Reader.NON_PRINTABLE.pattern))"
                       ).splitlines() == ["True", ascii(NON_PRINTABLE)]
