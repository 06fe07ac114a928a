# The two set-up commands (see README): `make demo` and `make test`.
PYTHON ?= python3

.PHONY: demo test lint bench install

install: .make-installed

.make-installed: setup.py
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch .make-installed

demo: .make-installed
	murano-engine run -l examples examples.hello.Cluster.plan

test: .make-installed
	$(PYTHON) -m pytest

lint: .make-installed
	ruff check murano_engine murano_agent tests benchmarks

bench: .make-installed
	$(PYTHON) benchmarks/dsl_bench.py
