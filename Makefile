# The two set-up commands (see README): `make demo` and `make test`.
PYTHON ?= python3
STATE ?= state/linux-cluster.json

.PHONY: demo demo-destroy test lint bench install samples

install: .make-installed

.make-installed: setup.py
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch .make-installed

# Deploys the replicated key-value store (2 nodes) on the embedded local cloud,
# then prints the curl commands that reach its nodes (examples/kv_reach.py).
demo: .make-installed
	@mkdir -p $(dir $(STATE))
	murano-engine deploy examples/linux-cluster.json -l dsl_packages --state $(STATE)
	@$(PYTHON) examples/kv_reach.py $(STATE)
	@echo "Tear it down: make demo-destroy"

demo-destroy: .make-installed
	murano-engine destroy -l dsl_packages --state $(STATE)

test: .make-installed
	$(PYTHON) -m pytest

lint: .make-installed
	ruff check murano_engine murano_agent murano_common tests benchmarks

# The sample configuration files, rendered from the option declarations
# (tests/common/test_options.py checks they are up to date).
samples:
	$(PYTHON) -m murano_common.options murano_agent.config > murano_agent/packaging/agent.conf.sample
	$(PYTHON) -m murano_common.options murano_engine.config > murano_engine/murano-engine.conf.sample
	$(PYTHON) -m murano_common.options murano_engine.api.config > murano_engine/api/murano-api.conf.sample

bench: .make-installed
	$(PYTHON) benchmarks/dsl_bench.py
	$(PYTHON) benchmarks/agent_bench.py
	$(PYTHON) benchmarks/deploy_bench.py
	$(PYTHON) benchmarks/api_bench.py
	$(PYTHON) benchmarks/sandbox_bench.py
	PYTHONPATH=. $(PYTHON) benchmarks/journal_bench.py
