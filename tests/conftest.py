"""Shared pytest settings."""

import sys

# As the CLI does: MuranoPL's own call-depth limit (2,000) must be reached
# before Python's recursion limit.
sys.setrecursionlimit(100_000)
