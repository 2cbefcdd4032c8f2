# All set-up happens here, so that a fresh machine needs only `make quickstart` or `make test`.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
OUT ?= work/quickstart

.PHONY: install quickstart test

install:
	$(PIP) install --quiet --disable-pip-version-check torch==2.13.0
	$(PIP) install --quiet --disable-pip-version-check -e '.[test]'

quickstart: install
	OUT=$(OUT) bash pipelines/quickstart.sh

test: install
	$(PYTHON) -m pytest -q
