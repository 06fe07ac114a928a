"""MuranoPL engine: loads packages, runs MuranoPL, deploys environments."""

#: the release (setup.py reads it from here: ``--version`` needs no installed metadata)
__version__ = "0.1.0"

from murano_engine.regex_table import prime

prime()  # before the standard library, PyYAML and yaql compile their patterns
