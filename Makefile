# All set-up happens here, so that a fresh machine needs only `make quickstart` or `make test`.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
OUT ?= work/quickstart

.PHONY: install quickstart lint test test-fast test-reproduce reproduce

install:
	@# a single-node SLURM for tests/integration/test_train_grid_slurm.py (Debian's packages, as root; skipped when installed)
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! dpkg -s slurm-wlm munge >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null; fi
	@# pip is skipped when this checkout is installed already from unchanged pyproject.toml and constraints.txt, every
	@# pin met (.ci/installed.py); both installs take the exact versions of constraints.txt (torch first, at its pin)
	@if $(PYTHON) .ci/installed.py test; then \
		echo "lsr-eval and its test extras are installed (pyproject.toml and constraints.txt unchanged)"; \
	else $(PIP) install --quiet --disable-pip-version-check -c constraints.txt torch && \
		$(PIP) install --quiet --disable-pip-version-check -c constraints.txt -e '.[test]' && \
		$(PYTHON) .ci/installed.py --record; fi

quickstart: install
	OUT=$(OUT) bash pipelines/quickstart.sh

# CI: the whole suite, which reruns the cheap committed results (tests/integration/test_reproduce_committed.py: BM25 on SciFact
# and NFCorpus, the published DL19 runs, the quickstart benchmark) and fails naming any row that moved. Three
# pytest-xdist workers on 2 cores, one thread each, a file to a worker in the collection's order: some of the suite
# waits (subprocesses, the SLURM queue), and each worker pays its own start (collection, torch and transformers, a JVM
# and its compiles): in three pairs of runs on 4 December 2026, three workers took 8-33 s less than four and 55-112
# CPU-s less (of about 860). tests/conftest.py puts the session's SciFact encoding first, the other
# files longest first, and the files that need the encoding once it should be done, so the other workers run the rest
# meanwhile (tests/scheduling.py, by tests/durations.json; refresh: cp work/test-durations.json tests/durations.json).
# Bytecode is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE; __pycache__ is ignored by git):
# otherwise every worker and subprocess compiles lsr_eval again, and pytest rewrites every test module's asserts
# again (half of a worker's 19 CPU-s of collection).
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(PYTHON) -m pytest
# ruff (pyproject.toml's [tool.ruff]: pyflakes, pycodestyle, import order, pyupgrade) before any test
lint: install
	$(PYTHON) -m ruff check --quiet
test: install lint
	$(PYTEST) -q --durations=25 -n 3 --dist loadfile --no-loadscope-reorder

# The fast tier (under a minute, on both cores): tests/unit/, which starts no JVM, reads nothing of ../shared and
# imports no ranx (any of them fails the test, in the full suite too: tests/conftest.py). tests/integration/ holds
# the rest; make test runs both.
test-fast:
	LSR_EVAL_TIER=unit $(PYTEST) -q --durations=10 -n 2 tests/unit

# Only the reproduction tests (a few minutes).
test-reproduce:
	$(PYTEST) -q tests/unit/reproduce/test_reproduce_tolerance.py tests/integration/test_reproduce_checks.py \
		tests/unit/reproduce/test_reproduce_readme.py tests/integration/test_reproduce_committed.py

# The regression matrix of this machine: every committed result rerun (those estimated to take at most
# MAX_MINUTES), into work/reproduce/matrix.{md,html,json}; MATRIX=results/reproduce to commit it (clean tree).
MAX_MINUTES ?= 15
MATRIX ?= work/reproduce
# ir_datasets reads the offline copies of ../shared (SciFact, NFCorpus, MS MARCO topics and qrels) from work/ir_datasets.
IRDS ?= $(CURDIR)/work/ir_datasets
reproduce:
	export IR_DATASETS_HOME=$(IRDS); for d in ir_datasets msmarco-passage; do \
		[ -d ../shared/data/$$d ] && $(PYTHON) -m lsr_eval.cli seed-irds ../shared/data/$$d; done; \
	OMP_NUM_THREADS=1 $(PYTHON) -m lsr_eval.cli reproduce --all results/ --out work/reproduce \
		--work-dir work/reproduce-cache --max-minutes $(MAX_MINUTES) --matrix $(MATRIX)
