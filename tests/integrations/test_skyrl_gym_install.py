"""Assay installs next to SkyRL-gym: in a fresh virtualenv holding skyrl-gym 0.4.0 as pip resolved it,
`pip install assay` (resolved by pip against what is installed, as a dry run with a report) adds packages
and moves none of the versions already there. Slow: skyrl-gym installs from the pip cache (pandas and
numpy); the dry run resolves Assay's dependencies (about 20 s together here)."""

from __future__ import annotations

import json
import os
import subprocess
import venv
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.requires_skyrl_gym, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
SKYRL_GYM = "skyrl-gym==0.4.0"


def _run(*command: str | Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv's own packages only
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=500, check=False, env=env
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout


def test_installing_assay_next_to_skyrl_gym_moves_none_of_its_versions(tmp_path: Path) -> None:
    env = tmp_path / "venv"
    venv.create(env, with_pip=True, system_site_packages=False)
    python = env / "bin" / "python"
    pip = (python, "-m", "pip", "install", "-q", "--disable-pip-version-check")
    _run(*pip, SKYRL_GYM)
    listed = json.loads(_run(python, "-m", "pip", "list", "--format", "json"))
    installed = {p["name"].lower().replace("_", "-"): p["version"] for p in listed}
    assert installed["skyrl-gym"] == "0.4.0" and {"pandas", "omegaconf", "func-timeout"} <= set(installed)
    report = tmp_path / "report.json"
    _run(*pip, "--dry-run", "--report", report, ROOT)
    planned = {
        entry["metadata"]["name"].lower().replace("_", "-"): entry["metadata"]["version"]
        for entry in json.loads(report.read_text())["install"]
    }
    assert "assay" in planned and "fastapi" in planned  # what Assay adds
    moved = {name: (installed[name], version) for name, version in planned.items() if name in installed}
    assert not moved, f"installing Assay would change these of skyrl-gym's environment: {moved}"
