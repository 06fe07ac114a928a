"""MuranoPL engine: loads packages, runs MuranoPL, deploys environments."""

from murano_engine.regex_table import prime

prime()  # before the standard library, PyYAML and yaql compile their patterns
