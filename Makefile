# OrbitMQ developer entry points. On a fresh machine `make test` and `make run` do all set-up.

VENV ?= .venv
PY ?= python3
# More options for `orbitmq start` (make run), e.g. ARGS="--listen-port 10921 --data-dir /tmp/x".
ARGS ?=

VPY := $(VENV)/bin/python
# The exact versions make installs; pyproject.toml holds the ranges users' installs pick from.
CONSTRAINTS := constraints.txt
# One venv, two levels: what running needs (make run), and that plus the dev and spark extras
# (make test and the rest). The full install stamps both, so a `make run` after a `make test`
# installs nothing, and a `make test` after a `make run` adds the extras to the same venv.
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed
# Root installs system packages itself; anyone else through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Only the source trees that exist yet (benchmarks/ arrives later) are linted.
LINT_DIRS := $(wildcard src tests benchmarks)

.DEFAULT_GOAL := test
.PHONY: test unit fault run bench fmt clean java-runtime browser-runtime

# $(call install,PIP_TARGET,STAMPS): pip install PIP_TARGET into the venv, then touch STAMPS.
# Two makes started at once in a fresh clone (two `make run`, or `make run` beside `make test`)
# would run two pips in one directory and break it, so installs hold a lock on the venv
# (flock, from util-linux, which every Debian has); the one that waited installs nothing if
# the other left the venv up to date for it.
define install
	@set -e; mkdir -p $(VENV); exec 9>$(VENV)/.install.lock; \
	if ! flock -n 9; then \
		echo "make: another make is installing into $(VENV): waiting for it to finish"; \
		flock 9; \
	fi; \
	if [ $(firstword $(2)) -nt pyproject.toml ] && [ $(firstword $(2)) -nt $(CONSTRAINTS) ]; then \
		echo "make: $(VENV) is up to date (installed by the other make)"; exit 0; \
	fi; \
	set -x; \
	test -x $(VPY) || $(PY) -m venv $(VENV); \
	$(VPY) -m pip install -c $(CONSTRAINTS) --upgrade pip; \
	$(VPY) -m pip install -c $(CONSTRAINTS) -e '$(1)'; \
	touch $(2)
endef

# The gRPC API's .proto files: the editable install compiles them into src/ (setup.py), so a
# changed .proto re-installs too.
PROTOS := $(wildcard src/orbitmq/proxy/v2/*.proto)

# Re-install whenever the dependencies, their pins, tool settings or the .proto files change.
# `make run` serves the web console and the gRPC endpoint too, so their extras are part of the
# run install. (A variable, because a comma in $(call)'s arguments would split them.)
RUN_INSTALL := .[console,grpc]
$(RUN_STAMP): pyproject.toml $(CONSTRAINTS) setup.py $(PROTOS)
	$(call install,$(RUN_INSTALL),$@)

FULL_INSTALL := .[dev,spark,console,grpc]
$(STAMP): pyproject.toml $(CONSTRAINTS) setup.py $(PROTOS)
	$(call install,$(FULL_INSTALL),$@ $(RUN_STAMP))

# The hot path compiled by mypyc (compiled-modules.txt; setup.py builds it in every install).
# When one of its sources changed since, the package would run all of them from source
# (orbitmq/_compiled.py) and `make test` would not test the compiled code: so when a source
# is newer than the stamp, ask the package whether its build is current (and of this list),
# and re-run the editable install (mypyc and the C compiler only) if it is not. The check
# keeps a fresh clone from building twice: the install above has just built it.
COMPILED_LIST := compiled-modules.txt
COMPILED_MODULES := $(shell sed 's/\#.*//' $(COMPILED_LIST))
COMPILED_SOURCES := $(patsubst %,src/%.py,$(subst .,/,$(COMPILED_MODULES)))
COMPILED_STAMP := $(VENV)/.compiled
$(COMPILED_STAMP): $(COMPILED_LIST) $(COMPILED_SOURCES) | $(RUN_STAMP)
	@set -e; exec 9>$(VENV)/.install.lock; flock 9; \
	if ORBITMQ_PURE=0 $(VPY) -c 'import sys, orbitmq; \
		sys.exit(sorted(orbitmq.compiled_modules()) != sorted(sys.argv[1:]))' \
		$(COMPILED_MODULES) 2>/dev/null; then touch $@; exit 0; fi; \
	echo "make: the compiled modules changed: rebuilding them (mypyc)"; set -x; \
	$(VPY) -m pip install -c $(CONSTRAINTS) --no-deps -e .; \
	touch $@

# Spark (tests/spark, the pipeline jobs) runs on the JVM: Java 17 or newer, the machine's own
# when it has one, else Debian's.
java-runtime:
	@if ! java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])'; then \
		echo "make: no Java 17+ for Spark: installing openjdk-17-jre-headless"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq openjdk-17-jre-headless; \
	fi

# The console's browser tests (tests/browser) drive Debian's headless Chromium through
# Debian's chromedriver, at their Debian paths: selenium downloads nothing.
browser-runtime:
	@if ! [ -x /usr/bin/chromium ] || ! [ -x /usr/bin/chromedriver ]; then \
		echo "make: no Chromium for the console's browser tests: installing chromium, chromium-driver"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium chromium-driver; \
	fi

# The same checks CI runs (.ci/run); make stops at the first that fails. mypy covers src/ and
# tests/ ([tool.mypy] files); pytest runs every test but the fault ones (slow, compat, spark
# and browser included) with the compiled modules, then a smoke set with the same modules as
# pure Python (ORBITMQ_PURE=1), which users of the pure build and the fallback rely on: the
# switch itself, the units of the compiled modules, the store, and produce / consume through
# a broker.
PURE_SMOKE := tests/unit/test_compiled_build.py tests/unit/protocol tests/unit/common \
	tests/unit/remoting tests/unit/test_store_smoke.py tests/component/store \
	tests/integration/test_producer.py tests/integration/test_push_consumer.py
test: $(STAMP) $(COMPILED_STAMP) java-runtime browser-runtime
	$(VPY) -m ruff format --check $(LINT_DIRS)
	$(VPY) -m ruff check $(LINT_DIRS)
	$(VPY) -m mypy
	$(VENV)/bin/lint-imports --no-logo
	@rc=0; ORBITMQ_PURE=0 $(VPY) -m pytest || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: FAILED: no tests ran (pytest exit 5)" >&2; fi; \
	exit $$rc
	ORBITMQ_PURE=1 $(VPY) -m pytest -q $(PURE_SMOKE)

# The quick loop while working: ruff, then the unit and component tests that take under ~3 s
# each (no slow, compat, spark or fault tests; no Spark, so no Java), about 35 s of CPU time:
# under a minute on a 2-core machine that is not busy with other work. `make test` runs all
# of these and the rest.
UNIT_MARKERS := not slow and not compat and not spark and not browser and not fault
unit: $(STAMP) $(COMPILED_STAMP)
	$(VPY) -m ruff format --check $(LINT_DIRS)
	$(VPY) -m ruff check $(LINT_DIRS)
	$(VPY) -m pytest -m "$(UNIT_MARKERS)" tests/unit tests/component

# Long crash / soak runs, excluded from `make test`.
fault: $(STAMP) $(COMPILED_STAMP) java-runtime
	$(VPY) -m pytest -m fault

run: $(RUN_STAMP) $(COMPILED_STAMP)
	$(VENV)/bin/orbitmq start $(ARGS)

bench: $(STAMP) $(COMPILED_STAMP)
	$(VPY) benchmarks/store_bench.py

fmt: $(STAMP)
	$(VPY) -m ruff format $(LINT_DIRS)
	$(VPY) -m ruff check --fix $(LINT_DIRS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis .import_linter_cache \
		build dist src/*.egg-info src/orbitmq/mypyc-build.json
	find src -name '*.so' -delete
	find . -path ./.git -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
