"""yaql imported without pbr's version lookup: the same version, pbr left as it was."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

from murano_engine.dsl import yaql_import


def test_the_version_comes_from_the_installed_metadata() -> None:
    assert yaql_import.installed_version() == version("yaql")


def test_a_fresh_process_gets_yaql_with_its_version_and_a_working_pbr() -> None:
    probe = ("import sys\n"
             "import murano_engine.dsl, yaql\n"
             "print(yaql.__version__, 'importlib.metadata' in sys.modules,"
             " 'pbr.version' in sys.modules)\n"
             "import pbr.version\n"
             "print(pbr.version.VersionInfo('yaql').version_string())\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == [version("yaql"), "False", "False", version("yaql")]
