# The two set-up commands (see README): `make demo` and `make test`. Both run in
# the project's own virtualenv (.venv), made on first use with BOOT_PYTHON, so a
# system Python that refuses pip installs (PEP 668) is never touched.
BOOT_PYTHON ?= python3
VENV ?= .venv
PYTHON := $(VENV)/bin/python
STATE ?= state/linux-cluster.json
# An engine configuration for the demo (default: the local cloud, RabbitMQ on 127.0.0.1)
CONFIG ?=

.PHONY: demo demo-destroy test lint bench install samples bytecode broker

install: $(VENV)/.installed bytecode

# The stamp lives in the virtualenv: a new one (or a removed one) installs again, and so
# does a change to setup.py or to the install line here.
# The editable install is a path entry (compat mode): setuptools' default editable
# finder is imported by every Python start in the virtualenv and costs about 25 ms
# of CPU each time (pathlib, re, importlib.util), more than a whole `python -c pass`.
$(VENV)/.installed: setup.py Makefile
	@test -x $(PYTHON) || { echo "make: creating the virtualenv $(VENV) with $(BOOT_PYTHON)"; \
		$(BOOT_PYTHON) -m venv $(VENV); }
	@echo "make: installing murano-engine and its test tools into $(VENV) (about a minute the first time)"
	$(PYTHON) -m pip install --disable-pip-version-check --progress-bar off -e '.[test]' \
		--config-settings editable_mode=compat
	$(PYTHON) -m murano_engine.cli.regex_table
	@# the libraries' bytecode: pip writes it, but a library installed otherwise may lack it
	@$(PYTHON) -m compileall -qq -j 0 $(VENV)/lib || true
	@touch $@

# The project's bytecode, written ahead and brought up to date before every command
# here: where PYTHONDONTWRITEBYTECODE=1 is set Python writes none, so every start
# compiled each module it imports again (a `murano-engine run` took 0.12 s, 0.05 s with
# it), and a sandbox's agent reads its code from a read-only folder. compileall writes
# it whatever that variable says, and again only for files changed since.
bytecode: $(VENV)/.installed
	@$(PYTHON) -m compileall -q -j 0 murano_engine murano_agent murano_common

# RabbitMQ's management plugin, which the engine needs (each server's agent gets a broker
# user of its own, made through its HTTP API): enabled when RabbitMQ runs here without it,
# else the error says the command to run (.ci/management-plugin).
broker:
	@bash .ci/management-plugin

# Deploys the replicated key-value store (2 nodes) on the embedded local cloud,
# then prints the curl commands that reach its nodes (examples/kv_reach.py).
demo: install broker
	@mkdir -p $(dir $(STATE))
	$(VENV)/bin/murano-engine deploy examples/linux-cluster.json -l dsl_packages --state $(STATE) \
		$(if $(CONFIG),--config $(CONFIG))
	@$(PYTHON) examples/kv_reach.py $(STATE)
	@echo "Tear it down: make demo-destroy"

# Removes the servers, the state file and (once empty) its folder.
demo-destroy: install broker
	$(VENV)/bin/murano-engine destroy --state $(STATE)
	@rmdir $(dir $(STATE)) 2>/dev/null || true

# Without the management plugin the tests that make servers fail, saying so; the others run.
test: install
	@bash .ci/management-plugin || true
	$(PYTHON) -m pytest

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check murano_engine murano_agent murano_common tests benchmarks

# The sample configuration files, rendered from the option declarations
# (tests/common/test_options.py checks they are up to date).
samples: $(VENV)/.installed
	$(PYTHON) -m murano_common.options murano_agent.config > murano_agent/packaging/agent.conf.sample
	$(PYTHON) -m murano_common.options murano_engine.engine.config > murano_engine/murano-engine.conf.sample
	$(PYTHON) -m murano_common.options murano_engine.backend.settings > murano_engine/api/murano-api.conf.sample

# Every benchmark runs (figures and targets: benchmarks/README.md); the target fails
# if any figure missed its target.
BENCHMARKS = dsl_bench murano_side_by_side budget_bench form_bench agent_bench deploy_bench api_bench sandbox_bench sandbox_limits_bench journal_bench signing_bench identity_bench relay_bench helloweb_bench plan_bench scale_bench projects_bench

bench: install
	@failed=""; for name in $(BENCHMARKS); do \
		echo "== benchmarks/$$name.py"; \
		PYTHONPATH=. $(PYTHON) benchmarks/$$name.py || failed="$$failed $$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "make bench: targets missed in:$$failed"; exit 1; fi

# The documentation (docs/: Sphinx, pages in MyST Markdown) into docs/_build/html; a
# warning fails the build. tests/docs/test_docs_build.py builds it in `make test` too.
.PHONY: docs
docs: $(VENV)/.installed
	$(PYTHON) -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "make docs: docs/_build/html/index.html"
