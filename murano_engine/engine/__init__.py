"""One engine run: the interpreter built with the core library's natives, the task
it runs (deploy, action, destroy), the journal that records what the run does
outside, class configs and the engine's configuration."""
