"""MuranoPL engine: loads packages, runs MuranoPL, deploys environments."""

#: the release (setup.py reads it from here: ``--version`` needs no installed metadata)
__version__ = "0.1.0"

from murano_engine.early_stop import keep_stops_of_a_command  # noqa: E402

keep_stops_of_a_command()  # first: a Ctrl-C while the rest is imported is kept

from murano_engine.regex_table import prime  # noqa: E402

prime()  # before the standard library, PyYAML and yaql compile their patterns
