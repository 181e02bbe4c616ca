"""What users import is pinned; importing it stays light."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import assay

CONTRACT = Path(__file__).resolve().parents[1] / "docs" / "contract.md"
PUBLIC = [
    "assay",
    "assay.client",
    "assay.types",
    "assay.errors",
    "assay.settings",
    "assay.registry",
    "assay.sessions",
    "assay.sessions.tools",
    *(
        f"assay.integrations.{name}"
        for name in ("verl", "verl_tools", "trl", "trl_env", "openrlhf", "slime", "clients")
    ),
]


def _public_names(module: object, name: str) -> set[str]:
    """The classes and functions a module defines (a package: also those of its own submodules)."""
    package = hasattr(module, "__path__")
    return {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and (value.__module__ == name or (package and value.__module__.startswith(f"{name}.")))
    }


@pytest.mark.parametrize("name", PUBLIC)
def test_each_public_module_exports_exactly_its_public_names(name: str) -> None:
    module = importlib.import_module(name)
    assert set(module.__all__) - {"__version__"} == _public_names(module, name)


def test_the_contract_page_names_every_public_module() -> None:
    table = CONTRACT.read_text().split("**Public Python modules.**", 1)[1]
    named = set(re.findall(r"`(assay(?:\.\w+)*)`", table))
    named |= {f"assay.integrations{short}" for short in re.findall(r"`(\.\w+)`", table)}
    assert set(PUBLIC) <= named


def test_public_names_are_pinned() -> None:
    assert sorted(assay.__all__) == [
        "Engine",
        "Item",
        "Result",
        "Scorer",
        "Settings",
        "Status",
        "TaskOptions",
        "__version__",
        "score",
    ]
    for name in assay.__all__:
        assert hasattr(assay, name)


def test_importing_assay_and_the_api_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, assay, assay.api, assay.client, assay.cli, assay.engine.scoring\n"
        "from assay.registry import Registry\n"
        "from assay.settings import Settings\n"
        "Registry.from_settings(Settings())\n"
        "optional = ('torch', 'transformers', 'vllm', 'docker', 'mcp', 'skyrl_gym')\n"
        "heavy = sorted(m for m in optional if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == ""
