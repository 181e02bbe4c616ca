"""Assay installs next to SkyRL-gym: in a fresh virtualenv holding skyrl-gym 0.4.0 as pip resolved it,
`pip install assay` moves none of its versions, `pip check` is clean, and the adapter runs there, driven
through skyrl_gym's `make`/`init`/`step` against a live server. Slow: the virtualenv installs from the
pip cache (about 30 s here)."""

from __future__ import annotations

import json
import os
import subprocess
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
from assay_testing import LiveServer
from session_testing import live_sessions

pytestmark = [pytest.mark.slow, pytest.mark.requires_skyrl_gym, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
SKYRL_GYM = "skyrl-gym==0.4.0"
EPISODE = """
import sys
import skyrl_gym
from assay.integrations.skyrl_gym import register

register()
row = {"reward_spec": {"ground_truth": "42"}, "max_turns": 3}
env = skyrl_gym.make("assay", env_config={"url": sys.argv[1]}, extras=row)
env.init([{"role": "user", "content": "What is 6 * 7?"}])
print(env.step("<python>print(6 * 7)</python>")["observations"][0]["content"].strip())
print(env.step("<answer>42</answer>")["reward"])
"""


def _run(*command: str | Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv's own Assay, not src/
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=800, check=False, env=env
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout


def _versions(python: Path) -> dict[str, str]:
    listed = json.loads(_run(python, "-m", "pip", "list", "--format", "json"))
    return {p["name"].lower(): p["version"] for p in listed}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], dict[str, str]]:
    """A fresh virtualenv: skyrl-gym first, then Assay; the versions before and after Assay."""
    env = tmp_path_factory.mktemp("skyrl-gym-venv")
    venv.create(env, with_pip=True, system_site_packages=False)
    python = env / "bin" / "python"
    pip = (python, "-m", "pip", "install", "-q", "--disable-pip-version-check")
    _run(*pip, SKYRL_GYM)
    before = _versions(python)
    _run(*pip, ROOT)
    return python, before, _versions(python)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    yield from live_sessions()


def test_installing_assay_moves_none_of_skyrl_gyms_versions(
    installed: tuple[Path, dict[str, str], dict[str, str]],
) -> None:
    python, before, after = installed
    assert before["skyrl-gym"] == "0.4.0" and "assay" in after
    moved = {name: (was, after.get(name)) for name, was in before.items() if after.get(name) != was}
    assert not moved, moved
    assert "No broken requirements found" in _run(python, "-m", "pip", "check")


def test_the_adapter_runs_an_episode_there(
    installed: tuple[Path, dict[str, str], dict[str, str]], server: LiveServer
) -> None:
    python = installed[0]
    assert _run(python, "-c", EPISODE, server.url).split() == ["42", "1.0"]
    assert server.engine.sessions.open_count == 0
