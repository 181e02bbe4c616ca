#!/usr/bin/env bash
# Build .venv-verifiers: Prime Intellect's `verifiers` 0.4.0 with Assay installed next to it, for the
# adapter tests (tests/integrations/test_verifiers_env.py run verifiers' own rollout and scoring code here).
#
# Why a separate environment: verifiers pins mcp==2.0.0 and openai>=2.54; the shared .venv holds mcp 1.x
# (OpenEnv's fastmcp 3) and nemo-gym wants openai<=2.7.2, so verifiers cannot share it.
#
# Why verifiers --no-deps: it declares `renderers[multimodal]`, whose extra brings transformers, tokenizers,
# pillow and the Hugging Face hub (about 400 MB) that the text-only rollout path never imports. Every
# other declared dependency installs with pip's resolver (renderers without the extra), so its pins hold.
# `uv` is what verifiers' own chat harness (`null`) uses to run its tool-calling program.
#
# Idempotent: does nothing when everything in CHECK imports.
# Usage: scripts/setup_verifiers.sh   (from anywhere; VERIFIERS_VENV=path overrides the location)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VERIFIERS_VENV:-$ROOT/.venv-verifiers}"
PYTHON="${PYTHON:-python3}"
CHECK='import verifiers.v1, verifiers.v1.harnesses.null, mcp.server.mcpserver, assay.client, assay.integrations.verifiers_env'

if [ -x "$VENV/bin/python" ] && [ -x "$VENV/bin/uv" ] && "$VENV/bin/python" -W ignore -c "$CHECK" >/dev/null 2>&1; then
    echo "setup_verifiers: $VENV already has verifiers and Assay; nothing to do"
    exit 0
fi
echo "setup_verifiers: building $VENV"
"$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --no-deps "verifiers==0.4.0"
# verifiers 0.4.0's own dependency list, `renderers` without its multimodal extra; then Assay itself.
"${PIP[@]}" install "aiohttp>=3.14.1" "anthropic>=1.0.0" "gepa>=0.0.6" "h11>=0.16.0" "httpx2>=2.12.0" \
    "httpx>=0.27.0" "loguru>=0.7.0" "math-verify>=0.8.0" "mcp==2.0.0" "msgpack>=1.1.2" "numpy>=2.1.0" \
    "openai<3.0.0,>=2.54.0" "prime-pydantic-config[toml]>=0.4.3" "prime-runs>=0.1.4" \
    "prime-sandboxes>=0.4.2" "prime-tunnel>=0.1.14" "pydantic>=2.12.3" "pyzmq>=27.1.0" \
    "renderers>=0.1.12" "rich>=11.0.0" "tenacity>=8.5.0" "tomli-w>=1.0.0" "typing-extensions>=4.12.2" \
    "uvicorn>=0.52.0" "uv>=0.5" -e "$ROOT"
"${PIP[@]}" check
"$VENV/bin/python" -W ignore -c "$CHECK"
echo "setup_verifiers: installed into $VENV"
