# The two set-up commands (see README): `make demo` and `make test`. Both run in
# the project's own virtualenv (.venv), made on first use with BOOT_PYTHON, so a
# system Python that refuses pip installs (PEP 668) is never touched.
BOOT_PYTHON ?= python3
VENV ?= .venv
PYTHON := $(VENV)/bin/python
STATE ?= state/linux-cluster.json

.PHONY: demo demo-destroy test lint bench install samples

install: $(VENV)/.installed

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
	@touch $@

# Deploys the replicated key-value store (2 nodes) on the embedded local cloud,
# then prints the curl commands that reach its nodes (examples/kv_reach.py).
demo: $(VENV)/.installed
	@mkdir -p $(dir $(STATE))
	$(VENV)/bin/murano-engine deploy examples/linux-cluster.json -l dsl_packages --state $(STATE)
	@$(PYTHON) examples/kv_reach.py $(STATE)
	@echo "Tear it down: make demo-destroy"

# Removes the servers, the state file and (once empty) its folder.
demo-destroy: $(VENV)/.installed
	$(VENV)/bin/murano-engine destroy --state $(STATE)
	@rmdir $(dir $(STATE)) 2>/dev/null || true

test: $(VENV)/.installed
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
BENCHMARKS = dsl_bench murano_side_by_side budget_bench form_bench agent_bench deploy_bench api_bench sandbox_bench sandbox_limits_bench journal_bench signing_bench identity_bench relay_bench helloweb_bench

bench: $(VENV)/.installed
	@failed=""; for name in $(BENCHMARKS); do \
		echo "== benchmarks/$$name.py"; \
		PYTHONPATH=. $(PYTHON) benchmarks/$$name.py || failed="$$failed $$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "make bench: targets missed in:$$failed"; exit 1; fi
