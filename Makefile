# The two commands the README opens with, and the checks CI runs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PKGS   := bot agents storage lab

.PHONY: demo test check lint format typecheck imports tests clean

# The virtualenv is made without pip and filled by uv, which the interpreter's own pip puts
# into it: here venv + ensurepip + a pip upgrade + pip's install took 34 s, and uv takes about
# 12 s, much of the 60 s budget for a first `make demo`. Nothing is precompiled; Python compiles
# what it imports on first use and caches it, a fraction of site-packages for the demo. That
# caching is why PYTHONDONTWRITEBYTECODE is dropped for everything make runs: with it set (as it
# is on some CI images) every test subprocess would recompile the kubernetes client and
# matplotlib from source. Stamp files keep `make test` from reinstalling when nothing changed.
unexport PYTHONDONTWRITEBYTECODE
$(BIN)/uv:
	test -x $(BIN)/python || $(PYTHON) -m venv --without-pip $(VENV)
	$(PYTHON) -m pip --python $(BIN)/python install --quiet "uv>=0.5"

PIP := $(BIN)/uv pip install --quiet --python $(BIN)/python
$(VENV)/.installed: pyproject.toml | $(BIN)/uv
	$(PIP) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/uv
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

# Coverage measures through sys.monitoring where the interpreter has it (3.12 and newer): it
# costs the suite a few per cent there, where 3.11's trace function made it 2.6 times slower
# (61 min against 23 on CI's two cores: the lab's simulator and API server are all Python
# calls). Lines, not branches: sys.monitoring measures branches only from 3.14. `.ci/run` builds
# the virtualenv with a 3.12 when the machine has one.
COVERAGE_CORE = $(shell $(BIN)/python -c 'import sys; print("sysmon" if sys.version_info >= (3, 12) else "ctrace")' 2>/dev/null)

tests: $(VENV)/.installed-dev
	rm -f .coverage .coverage.*
	COVERAGE_CORE=$(COVERAGE_CORE) $(BIN)/coverage run -m pytest --durations=20 $(PYTEST_ARGS)
	$(BIN)/coverage combine --quiet
	$(BIN)/coverage report

format: $(VENV)/.installed-dev
	$(BIN)/ruff format $(PKGS) tests
	$(BIN)/ruff check --fix $(PKGS) tests

clean:
	rm -rf $(VENV) .coverage .coverage.* .mypy_cache .ruff_cache .pytest_cache
