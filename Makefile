# The two commands of the README: `make demo` (install + `xai-audit` with no arguments: the three demo
# audits, written to reports/) and `make test` (install + the whole test suite). Both install into
# the active Python environment (a venv is recommended) and record the install in a stamp, so a
# second run skips pip entirely unless pyproject.toml, setup.py or the C sources changed, or the
# environment is a different one.

PYTHON ?= python
export MPLBACKEND ?= Agg

# one stamp per (environment, extra): switching venvs reinstalls, the same venv does not
ENV_ID := $(shell $(PYTHON) -c 'import hashlib, sys; print(hashlib.sha1(sys.prefix.encode()).hexdigest()[:10])')
STAMP = build/.installed-$(ENV_ID)-$(1)
INSTALL_INPUTS := pyproject.toml setup.py $(wildcard csrc/*.c csrc/*.h csrc/*.py)
# .[test] includes .[report]: after `make test`, `make demo` reuses that install
DEMO_STAMP := $(if $(wildcard $(call STAMP,test)),$(call STAMP,test),$(call STAMP,report))

.PHONY: demo test test-fast lint pages docs
demo: $(DEMO_STAMP)
	$(PYTHON) -m xai_plugins.cli

# the whole suite on every core (pytest-xdist; one file per worker, so module fixtures start once)
test: $(call STAMP,test)
	$(PYTHON) -m pytest -q -n auto --dist loadfile

# the edit loop: every test file but the slow ones (tests/conftest.py's SLOW_FILES), fewer hypothesis examples
test-fast: $(call STAMP,test)
	$(PYTHON) -m pytest -q -n auto --dist loadfile -m "not slow" --hypothesis-profile fast

# the demo audits' PDF pages as PNG under reports/pages/, to look at before calling a report change done
pages: demo
	$(PYTHON) .ci/pdf_pages.py

# the documentation site in docs/_build/html: warnings are errors, references are checked, the gallery runs
docs: $(call STAMP,docs)
	$(PYTHON) -m sphinx -b html -W --keep-going -n docs docs/_build/html

lint: $(call STAMP,test)
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy

build/.installed-$(ENV_ID)-%: $(INSTALL_INPUTS)
	$(PYTHON) -m pip install -e ".[$*]"
	@mkdir -p build && touch $@
