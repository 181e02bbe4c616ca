# Quick start: `make serve` (install and run the service) and `make test` (install everything that runs
# on a CPU and run the whole suite). Both work from a clean clone.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --disable-pip-version-check -q
# torch from the CPU wheel (an unpinned torch would pull a multi-GB CUDA build).
TEST_EXTRAS := dev,bench,sql,docker,prm,train,ray

.PHONY: serve test lint typecheck system-deps vllm-env clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) -U pip

$(VENV)/.base: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e .
	touch $@

$(VENV)/.test: pyproject.toml | $(VENV)/bin/python
	$(PIP) torch==2.13.0
	$(PIP) -e ".[$(TEST_EXTRAS)]"
	touch $@ $(VENV)/.base

serve: $(VENV)/.base
	$(VENV)/bin/assay serve

system-deps:
	bash scripts/system-deps.sh

# A real vLLM (CPU build) in its own environment: judge, PRM and trainer tests talk to it over HTTP.
vllm-env:
	bash scripts/setup_vllm_venv.sh

test: $(VENV)/.test system-deps vllm-env
	$(VENV)/bin/pytest

lint: $(VENV)/.test
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(VENV)/.test
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .venv-vllm .pytest_cache .mypy_cache .ruff_cache
