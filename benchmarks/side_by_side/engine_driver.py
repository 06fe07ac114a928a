"""The side-by-side workloads that have no command of their own, through this engine.

As the engine's console scripts are, this file is a few lines that import the
code (:mod:`engine_modes`, compiled once to bytecode): Python compiles a script
it is given anew at every start, which would add a millisecond to each run.
"""

from engine_modes import main

main()
