"""The command line: ``murano-engine`` (run, deploy, destroy, action, validate,
ui-model, worker) and ``murano-test-runner``."""
