"""Assay installs next to Prime Intellect's verifiers 0.4 without moving its pins: .venv-verifiers, a fresh
virtualenv built by scripts/setup_verifiers.sh (verifiers, everything it declares but the multimodal
extra of `renderers`, and Assay itself), satisfies every requirement verifiers declares, read from its own
metadata there. verifiers cannot share Assay's test environment (mcp==2.0.0, openai>=2.54)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-verifiers" / "bin" / "python"
PROBE = """
import importlib.metadata as m, json
installed = {d.metadata["Name"]: d.version for d in m.distributions()}
print(json.dumps({"requires": m.requires("verifiers"), "installed": installed}))
"""

pytestmark = pytest.mark.requires_verifiers


def _probe() -> tuple[list[str], dict[str, str]]:
    done = subprocess.run([str(PYTHON), "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    found = json.loads(done.stdout)
    return found["requires"], {canonicalize_name(k): v for k, v in found["installed"].items()}


def test_every_requirement_verifiers_declares_holds_beside_assay() -> None:
    requires, installed = _probe()
    assert "assay" in installed and installed["verifiers"] == "0.4.0"
    checked = 0
    for text in requires:
        requirement = Requirement(text)
        if requirement.marker is not None:  # its optional extras (e2b, harbor, modal, openenv, ta)
            continue
        name = canonicalize_name(requirement.name)
        assert name in installed, f"{text} is not installed"
        assert requirement.specifier.contains(installed[name], prereleases=True), (text, installed[name])
        checked += 1
    assert checked >= 20  # the base list, mcp==2.0.0 and openai>=2.54 among them
    assert installed["mcp"] == "2.0.0"


def test_pip_finds_no_broken_requirement() -> None:
    done = subprocess.run(
        [str(PYTHON), "-m", "pip", "check"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout
