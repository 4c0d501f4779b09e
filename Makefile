# OrbitMQ developer entry points. On a fresh machine `make test` and `make run` do all set-up.

VENV ?= .venv
PY ?= python3

VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Root installs system packages itself; anyone else through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Only the source trees that exist yet (benchmarks/ arrives later) are linted.
LINT_DIRS := $(wildcard src tests benchmarks)

.DEFAULT_GOAL := test
.PHONY: test fault run bench fmt clean java-runtime

# Re-install whenever the dependencies or tool settings change.
$(STAMP): pyproject.toml
	@test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install --upgrade pip
	$(VPY) -m pip install -e '.[dev,spark]'
	@touch $@

# Spark (tests/spark, the pipeline jobs) runs on the JVM: Java 17 or newer, the machine's own
# when it has one, else Debian's.
java-runtime:
	@if ! java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])'; then \
		echo "make: no Java 17+ for Spark: installing openjdk-17-jre-headless"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq openjdk-17-jre-headless; \
	fi

# The same checks CI runs (.ci/run); make stops at the first that fails.
test: $(STAMP) java-runtime
	$(VPY) -m ruff format --check $(LINT_DIRS)
	$(VPY) -m ruff check $(LINT_DIRS)
	$(VPY) -m mypy
	$(VENV)/bin/lint-imports --no-logo
	@rc=0; $(VPY) -m pytest || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: FAILED: no tests ran (pytest exit 5)" >&2; fi; \
	exit $$rc

# Long crash / soak runs, excluded from `make test`.
fault: $(STAMP) java-runtime
	$(VPY) -m pytest -m fault

run: $(STAMP)
	$(VENV)/bin/orbitmq start

bench: $(STAMP)
	$(VPY) benchmarks/store_bench.py

fmt: $(STAMP)
	$(VPY) -m ruff format $(LINT_DIRS)
	$(VPY) -m ruff check --fix $(LINT_DIRS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis .import_linter_cache \
		build dist src/*.egg-info
	find . -path ./.git -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
