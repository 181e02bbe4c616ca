#!/usr/bin/env bash
# Build .venv-nemo-gym: NeMo Gym 0.7.0 (its SimpleAgent, ServerClient and resources-server models) with
# Assay installed beside it, for tests/api/test_nemo_gym.py, whose driver runs NeMo Gym's own code there.
#
# Why its own environment: nemo-gym pins openai==2.44.0, mcp<2 and anthropic<=0.109.2, and pip fits it
# into Assay's test environment only by moving installed versions down (omegaconf, pyarrow, cachetools,
# python-dateutil, importlib_metadata: `pip install --dry-run` says which) beside verl's, OpenRLHF's and
# TRL's. Assay talks to it over HTTP.
#
# Why --no-deps: nemo-gym declares Python >= 3.13.14 (it runs on 3.11: --ignore-requires-python) and a
# large dependency list (ray[default], mlflow, wandb, datasets, vllm extras) that the modules the tests
# run do not need. DEPS is what those modules import, at nemo-gym's own specifiers; ray goes in without
# its dependencies because nemo_gym.global_config reads ray's version at import (it never starts Ray
# here). Assay goes in with its own dependencies; the test checks that no nemo-gym pin moved.
#
# Idempotent: does nothing when the environment already imports everything in CHECK.
# Usage: scripts/setup_nemo_gym.sh   (NEMO_GYM_VENV=path overrides the location, PYTHON the interpreter)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${NEMO_GYM_VENV:-$ROOT/.venv-nemo-gym}"
PYTHON="${PYTHON:-python3}"
CHECK='import nemo_gym.rollout_collection, responses_api_agents.simple_agent.app, environment_servers.legacy_agent.app, assay.api.nemo_gym_wire'
DEPS=(
    "openai==2.44.0" "anthropic<=0.109.2" "fastapi" "uvicorn" "httptools" "pydantic" "aiohttp>=3.14.4"
    "orjson>=3.11.6" "omegaconf" "hydra-core" "requests" "rich" "itsdangerous" "anyio>=4.15.1"
    "tqdm" "pyyaml" "yappi>=1.7.6" "pydot" "pandas" "scipy>=1.14.1,<1.18" "wandb>=0.30.0"
    "packaging>=24.2"
)

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$CHECK" >/dev/null 2>&1; then
    echo "setup_nemo_gym: $VENV already has nemo-gym and Assay; nothing to do"
    exit 0
fi

echo "setup_nemo_gym: building $VENV"
"$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --no-deps --ignore-requires-python "nemo-gym==0.7.0" "ray==2.60.0"
"${PIP[@]}" install --prefer-binary "${DEPS[@]}" -e "$ROOT"  # one resolver pass for both
"$VENV/bin/python" -c "$CHECK"
echo "setup_nemo_gym: done"
