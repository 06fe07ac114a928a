"""Default execution budgets of one engine task and of one ui.yaml form evaluation (the
``[engine]`` options' defaults), and the clouds' defaults the configuration names.

Constants only, so the configuration can name them without loading the interpreter
or the cloud layer.
"""

#: The most items a collection made by an expression may hold (yaql's ``limitIterators``).
ITERATOR_LIMIT = 2000
#: The most bytes a value made by an expression may take (yaql's ``memoryQuota``).
MEMORY_QUOTA = 512 * 1024

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

#: Seconds the engine waits for a stack operation unless configured otherwise.
DEFAULT_STACK_TIMEOUT = 3600.0
#: Where the local cloud keeps its state unless ``[local_cloud] state_dir`` says otherwise.
DEFAULT_STATE_DIR = "~/.local/state/murano-engine/local-cloud"
