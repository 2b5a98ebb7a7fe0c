# The two set-up commands from the README: `make demo` and `make test`.
# Each creates .venv and installs the pinned requirements it needs, then runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint versitygw runtime-python remake-venv bench bench-relay-memory bench-quick bench-concurrency bench-cold-start bench-listing-shards bench-reader schema synth

# pyproject.toml's requires-python. A Python older than it is refused before a venv is made, in one line, rather than
# failing inside pip on the first pin without a wheel for it (pyarrow).
PYTHON_MIN := 3.11
IS_NEW_ENOUGH := -c 'import sys; sys.exit(sys.version_info[:2] < tuple(map(int, "$(PYTHON_MIN)".split("."))))'

# The venv is made again when its Python does not run or is older than PYTHON_MIN (one a `make` made before PYTHON=
# named a newer one), so a rerun with the right PYTHON= never reuses it.
# With no venv yet, the venv's own rule makes it; REMAKE_VENV is only for one that is there and unusable (a phony
# prerequisite would reinstall every pin on every make).
ifneq ($(shell $(BIN)/python $(IS_NEW_ENOUGH) 2>/dev/null && echo ok),ok)
ifneq ($(wildcard $(VENV)),)
REMAKE_VENV := remake-venv
endif
ifneq ($(shell $(PYTHON) $(IS_NEW_ENOUGH) 2>/dev/null && echo ok),ok)
$(error s3bulk needs Python $(PYTHON_MIN) or later (3.11 to 3.13 are tested), and PYTHON=$(PYTHON) is $(or $(shell $(PYTHON) -V 2>&1 </dev/null | grep -o 'Python [0-9.]*'),not a Python that runs): run make $(or $(MAKECMDGOALS),demo) PYTHON=python3.11 (or python3.12, python3.13))
endif
endif

remake-venv: ;

# Made from scratch, and removed again if making it fails, so no half-made venv is taken for a good one.
$(BIN)/python: $(REMAKE_VENV)
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV) && $(BIN)/pip install -q --upgrade pip || { rm -rf $(VENV); exit 1; }

$(VENV)/.runtime: requirements.txt requirements-lambda.txt requirements-lambda-manifest.txt pyproject.toml $(REMAKE_VENV) | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $@

$(VENV)/.dev: requirements.txt requirements-lambda.txt requirements-lambda-manifest.txt requirements-dev.txt pyproject.toml $(REMAKE_VENV) | $(BIN)/python
	$(BIN)/pip install -q -r requirements-dev.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $@ $(VENV)/.runtime

demo: $(VENV)/.runtime
	$(BIN)/s3bulk demo

lint: $(VENV)/.dev
	$(BIN)/ruff check s3bulk tests bench functions infra app.py
	$(BIN)/ruff format --check s3bulk tests bench functions infra app.py
	$(BIN)/mypy
	$(BIN)/mypy app.py

# Two worker processes, each a test file at a time (a file's module fixtures, a stack or a server, built once): the
# suite took 29 min in one process and 18 in two on a 2-core machine, most of its time being servers' and Lambdas' waits.
TEST_WORKERS ?= 2

# versitygw (tests/integration: a second S3 implementation) is built once with Go into ~/.cache/s3bulk, ~2 min on a
# cold Go cache: here, visibly, rather than inside the first test that needs it.
versitygw: $(VENV)/.dev
	$(BIN)/python -c 'from tests.integration.versitygw import ensure_versitygw; ensure_versitygw()'

# CPython of the functions' runtime version (infra/runtime.py): it compiles the assets' bytecode at synth and runs
# them on a bare interpreter in the tests. Built once into ~/.cache/s3bulk from Debian's source, ~2 min on 2 cores.
runtime-python: $(VENV)/.runtime
	$(BIN)/python -m infra.runtime

# The unit layer again on that interpreter (the newest Python the CLI is tested on), in a venv of its own with the
# same pins: made once (2-5 minutes on 2 cores; the unit layer then takes about 1), reinstalled when a pin changes.
VENV313 := .venv313

$(VENV313)/bin/python: | runtime-python
	"$$($(BIN)/python -m infra.runtime)" -m venv $(VENV313) && $(VENV313)/bin/pip install -q --upgrade pip || { rm -rf $(VENV313); exit 1; }

$(VENV313)/.dev: requirements.txt requirements-lambda.txt requirements-lambda-manifest.txt requirements-dev.txt pyproject.toml | $(VENV313)/bin/python
	$(VENV313)/bin/pip install -q -r requirements-dev.txt
	$(VENV313)/bin/pip install -q --no-deps -e .
	touch $@

test: lint versitygw runtime-python $(VENV313)/.dev
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile
	$(VENV313)/bin/pytest tests/unit -n $(TEST_WORKERS) --dist loadfile

bench-cold-start: $(VENV)/.runtime
	$(BIN)/python -m bench.cold_start --runs 7

bench-concurrency: $(VENV)/.runtime
	$(BIN)/python -m bench.concurrency_sweep --objects 2000 --runs 3

# The stack's sharded listing against K (docs/benchmarks-listing.md); toxiproxy is built with the dev venv's Go.
bench-listing-shards: $(VENV)/.dev
	$(BIN)/python -m bench.listing_shards --runs 3

# ObjectReader's range size x prefetch grid against get_object, s3transfer and the AWS CLI (docs/benchmarks-reader.md).
bench-reader: $(VENV)/.dev
	$(BIN)/python -m bench.reader --runs 3 --write-docs

# Peak RSS of a relay across endpoints against the object's size (docs/relay.md).
bench-relay-memory: $(VENV)/.dev
	$(BIN)/python -m bench.relay_memory --runs 3

schema: $(VENV)/.runtime
	$(BIN)/s3bulk schema > docs/job.schema.json
	$(BIN)/python -c 'from pathlib import Path; from s3bulk.job.fields import with_table; p = Path("docs/jobs.md"); p.write_text(with_table(p.read_text()))'

# make synth CDK_ARGS="-c read_buckets=my-src,my-dst -c write_buckets=my-dst"
synth: $(VENV)/.runtime
	npm ci --no-audit --no-fund
	JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 CDK_DISABLE_CLI_TELEMETRY=true CDK_DISABLE_VERSION_CHECK=1 npx cdk synth --quiet $(CDK_ARGS)

bench: $(VENV)/.dev
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.cost_model

bench-quick: $(VENV)/.dev
	$(BIN)/python -m bench.run --quick --out /tmp/s3bulk-bench/benchmarks.md
