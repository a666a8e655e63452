# Set-up and the two entry points: `make demo` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: demo test lint install install-dev bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

# setuptools' editable build warns (BuildBackendWarning "Editable installation. ... Please be careful with folders
# in your working directory with the same name as your package"): our package-dir mapping (bayessdc.models ->
# models/, ...) needs its import finder, and no folder here is named bayessdc. That one message is ignored.
EDITABLE_QUIET := PYTHONWARNINGS="ignore:Editable installation"

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(EDITABLE_QUIET) $(BIN)/pip install -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(EDITABLE_QUIET) $(BIN)/pip install -e '.[dev]'
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(BIN)/bayessdc demo --out demo-output

test: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .

bench: $(VENV)/.installed
	for script in bench/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) demo-output build *.egg-info
