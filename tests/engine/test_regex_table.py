"""murano_engine.regex_table: compiled regular expressions kept beside the code."""

from __future__ import annotations

import json
import re
import re._compiler
import subprocess
import sys
from pathlib import Path

from murano_engine import regex_table

REPO = Path(__file__).resolve().parents[2]


def _unique_patterns() -> list[tuple[str | bytes, int]]:
    # Patterns no module compiles, so each test's are its own.
    return [(r"(?P<word>table-[a-z]+)-(\d+)", re.IGNORECASE),
            (rb"^table-bytes\s+(?P<rest>.*)$", re.MULTILINE)]


def test_a_recorded_pattern_primes_re_with_an_equal_pattern_that_matches_alike(tmp_path):
    patterns = _unique_patterns()
    table = regex_table.record(lambda: [re.compile(p, f) for p, f in patterns])
    assert {(type(p), p, int(f)) for p, f in patterns} <= set(table)
    path = str(tmp_path / "table.pickle")
    regex_table.write(table, path)
    re.purge()

    assert regex_table.prime(path) == len(table)

    for pattern, flags in patterns:
        primed = re._cache[type(pattern), pattern, int(flags)]  # type: ignore[attr-defined]
        assert re.compile(pattern, flags) is primed  # what re.compile now returns
        fresh = re._compiler.compile(pattern, int(flags))
        assert primed == fresh and primed is not fresh  # equal patterns have equal code
        assert (primed.flags, primed.groups, primed.groupindex) == \
            (fresh.flags, fresh.groups, fresh.groupindex)
    word = re.compile(*patterns[0]).match("TABLE-abc-42")
    assert word is not None and word.group("word", 2) == ("TABLE-abc", "42")
    rest = re.compile(*patterns[1]).search(b"x\ntable-bytes  tail")
    assert rest is not None and rest.group("rest") == b"tail"


def test_a_damaged_or_missing_table_primes_nothing_and_patterns_still_compile(tmp_path):
    damaged = tmp_path / "damaged.pickle"
    damaged.write_bytes(b"\x80\x05not a pickle")
    wrong_code = tmp_path / "wrong.pickle"
    pattern, flags = _unique_patterns()[0]
    regex_table.write({(str, pattern, int(flags)): (pattern, int(flags), [9999], 0, {}, ())},
                      str(wrong_code))
    re.purge()

    assert regex_table.prime(str(damaged)) == 0
    assert regex_table.prime(str(tmp_path / "missing.pickle")) == 0
    assert regex_table.prime(str(wrong_code)) == 0  # _sre refuses code that is not valid
    assert re.compile(pattern, flags).match("table-x-1") is not None


def test_the_engines_table_holds_pyyaml_yaql_and_cli_patterns_each_as_re_compiles_it():
    # Recorded in a fresh interpreter, as make install does; every entry is checked
    # against a fresh compile of its pattern there.
    script = """
import re, re._compiler, _sre
from murano_engine import regex_table
from murano_engine.cli.regex_table import _engine_work
table = regex_table.record(_engine_work)
import json
unequal = [repr(key[1])[:60] for key, arguments in table.items()
           if _sre.compile(*arguments) != re._compiler.compile(arguments[0], key[2])]
print(json.dumps({"patterns": [key[1] if isinstance(key[1], str) else "<bytes>"
                               for key in table], "unequal": unequal}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=REPO, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    patterns = found["patterns"]
    assert found["unequal"] == []
    assert any("yes|Yes|YES" in p for p in patterns)  # PyYAML's resolver (booleans)
    assert any("t_DOLLAR" in p for p in patterns)  # yaql's lexer
    assert any("[ \\t\\n\\r]*" == p for p in patterns)  # json's decoder
    assert len(patterns) >= 50


def test_importing_the_engine_primes_re_with_this_builds_table():
    # make install (and so make test) writes the table.
    path = Path(regex_table.table_path())
    assert path.is_file(), f"no table at {path}: make install writes it"
    script = """
import _pickle, json, re
import murano_engine
from murano_engine import regex_table
with open(regex_table.table_path(), "rb") as file:
    keys = list(_pickle.loads(file.read()))
print(json.dumps([len(keys), sum(key in re._cache for key in keys)]))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=REPO, check=True)
    kept, primed = json.loads(done.stdout.strip().splitlines()[-1])
    assert kept >= 50 and primed == kept
