#!/usr/bin/env bash
# The official MCP SDK for the /mcp tests, in both generations the ecosystems pin.
#
# - The test environment ($VENV) gets mcp 1.x: OpenEnv's fastmcp (scripts/setup_trainer_clients.sh) pins
#   mcp<2 there, as NeMo Gym does (mcp>=1.27,<2).
# - $MCP_VENV (.venv-mcp) gets Assay with its `mcp` extra next to mcp 2.3.0 (what verifiers 0.4 and the
#   index's newest release use: httpx2, mcp-types), installed by pip's resolver with no --no-deps, so the
#   install itself shows that the two resolve together. One test drives the 2.x server and client there.
#
# Idempotent: does nothing when both environments already import what the tests use.
# Usage: scripts/setup_mcp.sh   (VENV and MCP_VENV override the environments, default .venv, .venv-mcp)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
MCP_VENV="${MCP_VENV:-$ROOT/.venv-mcp}"
PYTHON="${PYTHON:-python3}"
PIP=(-m pip --disable-pip-version-check -q)
V1='import mcp.server.streamable_http_manager, mcp.client.streamable_http'
V2='import importlib.metadata as m, assay.api, mcp.client.streamable_http; assert m.version("mcp") == "2.3.0"'

if ! "$VENV/bin/python" -c "$V1" >/dev/null 2>&1; then
    "$VENV/bin/python" "${PIP[@]}" install "mcp>=1.27,<2"
fi
if [ -x "$MCP_VENV/bin/python" ] && "$MCP_VENV/bin/python" -c "$V2" >/dev/null 2>&1; then
    echo "setup_mcp: $VENV has mcp 1.x and $MCP_VENV has Assay with mcp 2.3.0; nothing to do"
    exit 0
fi
"$PYTHON" -m venv "$MCP_VENV"
"$MCP_VENV/bin/python" "${PIP[@]}" install -e "$ROOT[mcp]" "mcp==2.3.0"
"$MCP_VENV/bin/python" -c "$V2"
echo "setup_mcp: installed Assay with mcp 2.3.0 into $MCP_VENV"
