# The two commands the README opens with, and the checks CI runs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PKGS   := bot agents storage lab

.PHONY: demo test check lint format typecheck imports tests clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamp files keep `make test` from reinstalling when nothing changed. --no-compile halves the
# install (about 20 s instead of 40 s here): Python compiles what it imports on first use and
# caches it, which for the demo is a fraction of site-packages. That caching is why
# PYTHONDONTWRITEBYTECODE is dropped for everything make runs: with it set (as it is on some CI
# images) nothing is ever cached, every test subprocess recompiles the kubernetes client and
# matplotlib from source (about 10 s each), and the suite takes twice as long.
unexport PYTHONDONTWRITEBYTECODE
PIP := $(BIN)/python -m pip install --quiet --no-compile
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[dev]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/stratus demo

check: $(VENV)/.installed-dev
	$(BIN)/ruff format --check $(PKGS) tests
	$(BIN)/ruff check $(PKGS) tests
	$(BIN)/mypy $(PKGS)
	$(BIN)/lint-imports

test: check tests

tests: $(VENV)/.installed-dev
	rm -f .coverage .coverage.*
	$(BIN)/coverage run -m pytest --durations=20 $(PYTEST_ARGS)
	$(BIN)/coverage combine --quiet
	$(BIN)/coverage report

format: $(VENV)/.installed-dev
	$(BIN)/ruff format $(PKGS) tests
	$(BIN)/ruff check --fix $(PKGS) tests

clean:
	rm -rf $(VENV) .coverage .coverage.* .mypy_cache .ruff_cache .pytest_cache
