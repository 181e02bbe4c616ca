#!/usr/bin/env bash
# Install SkyRL-gym 0.4.0 into the test environment, and SkyRL's generator (skyrl-train 0.3.1) beside it
# in .skyrl-train/, for the SkyRL environment adapter's tests (assay.integrations.skyrl_gym is driven
# through skyrl_gym's own registry, make, init and step, and through skyrl-train's SkyRLGymGenerator).
#
# skyrl-gym with its dependencies, through pip's resolver: it declares only func_timeout, pandas,
# requests and omegaconf, and in Assay's test environment that adds func_timeout and moves no installed
# version (checked with `pip install --dry-run skyrl-gym==0.4.0`).
#
# skyrl-train cannot share the environment: it declares Python 3.12 only, pins ray 2.51.1 (the
# environment has Ray 2.60 for `assay serve --ray`; its generator imports
# `ray.util.placement_group.PlacementGroupSchedulingStrategy`, which 2.60 no longer has) and a GPU stack
# (flash-attn, vllm, deepspeed). Its generator module needs only loguru and that ray beyond what the test
# environment has, and runs on 3.11; so it goes, with --no-deps and --ignore-requires-python, into its own
# folder that the generator test puts first on PYTHONPATH of a child process (the suite keeps Ray 2.60).
#
# Idempotent: does nothing when both are there.
# Usage: scripts/setup_skyrl_gym.sh   (VENV=path overrides the environment, default .venv)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
TRAIN="$ROOT/.skyrl-train"
PIP=("$PY" -m pip --disable-pip-version-check -q install)
CHECK='import importlib.metadata as m, skyrl_gym; assert m.version("skyrl-gym") == "0.4.0"'
# The folder's own versions come first on its PYTHONPATH (cheap: imports nothing of them).
HAS_TRAIN='import importlib.metadata as m; assert [m.version(d) for d in ("skyrl-train", "ray", "loguru")] == ["0.3.1", "2.51.1", "0.7.3"]'
IMPORTS_TRAIN='import skyrl_train.generators.skyrl_gym_generator, ray; assert ray.__version__ == "2.51.1"'

if ! "$PY" -W ignore -c "$CHECK" >/dev/null 2>&1; then
    "${PIP[@]}" "skyrl-gym==0.4.0"
    "$PY" -W ignore -c "$CHECK"
fi
if ! PYTHONPATH="$TRAIN" "$PY" -W ignore -c "$HAS_TRAIN" >/dev/null 2>&1; then
    rm -rf "$TRAIN"
    "${PIP[@]}" --no-deps --ignore-requires-python --target "$TRAIN" \
        "skyrl-train==0.3.1" "ray==2.51.1" "loguru==0.7.3"
    PYTHONPATH="$TRAIN" "$PY" -W ignore -c "$IMPORTS_TRAIN"
fi
echo "setup_skyrl_gym: $VENV has skyrl-gym 0.4.0; $TRAIN has skyrl-train 0.3.1"
