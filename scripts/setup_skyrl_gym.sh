#!/usr/bin/env bash
# Install SkyRL-gym 0.4.0 into the test environment, for the SkyRL environment adapter's tests
# (assay.integrations.skyrl_gym drives skyrl_gym's own registry, make, init and step).
#
# With its dependencies, through pip's resolver: skyrl-gym declares only func_timeout, pandas, requests
# and omegaconf, and in Assay's test environment that adds func_timeout and moves no installed version
# (checked with `pip install --dry-run skyrl-gym==0.4.0`). SkyRL's trainer (skyrl-train) requires Python
# 3.12 and a GPU stack, and is not installed: the adapter is what its generator calls.
#
# Idempotent: does nothing when skyrl_gym 0.4.0 imports.
# Usage: scripts/setup_skyrl_gym.sh   (VENV=path overrides the environment, default .venv)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
CHECK='import importlib.metadata as m, skyrl_gym; assert m.version("skyrl-gym") == "0.4.0"'

if "$PY" -W ignore -c "$CHECK" >/dev/null 2>&1; then
    echo "setup_skyrl_gym: $VENV already has skyrl-gym 0.4.0; nothing to do"
    exit 0
fi
"$PY" -m pip --disable-pip-version-check -q install "skyrl-gym==0.4.0"
"$PY" -W ignore -c "$CHECK"
echo "setup_skyrl_gym: installed into $VENV"
