"""Shared pytest settings: run the engine with green threads like the CLI does."""

import sys

from murano_engine import concurrency

sys.setrecursionlimit(100_000)
concurrency.setup()
