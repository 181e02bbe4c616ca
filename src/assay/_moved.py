"""Old import paths of modules that moved (issue 24): each old module is a shim that calls `warn_moved`
and re-exports the new module's names, so users' imports and configs that name the old path keep
working (the same objects, one DeprecationWarning per process) while they move to the new one.

Nothing inside `assay` imports a shim (tests/test_moved.py checks the import graph and each shim).
"""

from __future__ import annotations

import warnings

# old module path -> new module path
MOVED = {
    "assay.rl_client.run": "assay.rl_client.runs.driver",
    "assay.rl_client.run_config": "assay.rl_client.runs.config",
    "assay.rl_client.command": "assay.rl_client.runs.command",
    "assay.rl_client.data": "assay.rl_client.runs.data",
    "assay.rl_client.demo": "assay.rl_client.runs.demo",
    "assay.rl_client.demo_tools": "assay.rl_client.runs.demo_tools",
    "assay.rl_client.evaluate": "assay.rl_client.runs.evaluate",
    "assay.rl_client.example": "assay.rl_client.runs.example",
    "assay.rl_client.mix": "assay.rl_client.runs.mix",
    "assay.rl_client.models": "assay.rl_client.runs.models",
    "assay.rl_client.service": "assay.rl_client.runs.service",
    "assay.rl_client.sft": "assay.rl_client.runs.sft",
    "assay.rl_client.star": "assay.rl_client.runs.star",
    "assay.rl_client.backends.vllm_server": "assay.rl_client.runs.vllm_server",
    "assay.rl_client.integrations": "assay.integrations.clients",
    "assay.rl_client.integrations.openrlhf": "assay.integrations.openrlhf",
    "assay.rl_client.integrations.slime": "assay.integrations.slime",
    "assay.rl_client.integrations.trl": "assay.integrations.trl",
    "assay.rl_client.integrations.verl": "assay.integrations.verl",
}


def warn_moved(old: str) -> None:
    """Warn that `old` moved; attributed to the line that imported it (importlib's frames are skipped)."""
    warnings.warn(
        f"{old} moved to {MOVED[old]} (issue 24); import it from there: the old path will be removed",
        DeprecationWarning,
        stacklevel=3,
    )
