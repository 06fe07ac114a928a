"""Default execution budget of one engine task (the ``[engine]`` options' defaults).

Constants only, so the configuration can name them without loading the interpreter.
"""

#: Seconds one engine task may take, sleeps and waits included.
DEFAULT_TASK_TIME_LIMIT = 14400.0
#: MuranoPL steps (statements, loop iterations, lambda evaluations) one task may run.
DEFAULT_TASK_STEP_LIMIT = 100_000_000
#: Megabytes the engine process may hold while a task runs (its resident memory).
DEFAULT_TASK_MEMORY_LIMIT = 4096
