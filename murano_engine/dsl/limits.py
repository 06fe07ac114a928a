"""Default execution budgets of one engine task and of one ui.yaml form evaluation (the
``[engine]`` options' defaults).

Constants only, so the configuration can name them without loading the interpreter.
"""

#: Seconds one engine task may take, sleeps and waits included.
DEFAULT_TASK_TIME_LIMIT = 14400.0
#: MuranoPL steps (statements, loop iterations, lambda evaluations) one task may run.
DEFAULT_TASK_STEP_LIMIT = 100_000_000
#: Megabytes the engine process may hold while a task runs (its resident memory).
DEFAULT_TASK_MEMORY_LIMIT = 4096

#: Seconds one form evaluation (a wizard page, a ``ui/model`` call) may take.
DEFAULT_FORM_TIME_LIMIT = 5.0
#: yaql calls one form evaluation may make.
DEFAULT_FORM_STEP_LIMIT = 1_000_000
#: Megabytes the process may hold while a form is evaluated (its resident memory).
DEFAULT_FORM_MEMORY_LIMIT = 2048
