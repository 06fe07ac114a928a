"""Importing PyYAML without the slowest line of its import.

``yaml.reader`` compiles, as the module loads, a character class of every character
it refuses (``Reader.NON_PRINTABLE``, written as the complement of the printable
ones). Python's ``re`` builds that class by walking the ranges a character at a
time: about 57 million instructions (~15 ms), a sixth of a cold ``murano-engine
run`` and of every agent's start (kombu imports PyYAML for its yaml serializer).
The same set written directly (the non-printable ranges) compiles in a few
microseconds. Priming ``re``'s cache with it under PyYAML's text makes PyYAML's
``re.compile`` return it: the same pattern, matching the same characters (a
test checks every code point). Where ``re`` keeps no such cache, nothing is
primed and the import is only slower.
"""

from __future__ import annotations

import re
import sys
from types import ModuleType

#: PyYAML's ``Reader.NON_PRINTABLE``, as written in ``yaml/reader.py``
PYYAML_NON_PRINTABLE = "[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]"
#: the characters that class matches, listed instead of complemented
NON_PRINTABLE = "[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x84\x86-\x9F\uD800-\uDFFF\uFFFE\uFFFF]"


def prime_reader_pattern() -> None:
    """Hand PyYAML's next ``re.compile`` of its reader's class the cheap spelling.
    Call it before ``yaml`` (or kombu, which imports it) is first imported."""
    if "yaml.reader" in sys.modules:
        return
    cache = getattr(re, "_cache", None)
    if isinstance(cache, dict):
        cache.setdefault((str, PYYAML_NON_PRINTABLE, 0), re.compile(NON_PRINTABLE))


def import_yaml() -> ModuleType:
    """The ``yaml`` module, imported (the first time) with its reader's class primed."""
    yaml = sys.modules.get("yaml")
    if yaml is None:
        prime_reader_pattern()
        import yaml
    return yaml
