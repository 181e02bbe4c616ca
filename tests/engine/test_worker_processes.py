"""A first script works as people write it: with or without a `__main__` guard, and leaves nothing behind.

Each test runs a real script in a fresh interpreter, as a user would (`python script.py`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest
from assay_testing import TESTS

ITEM = {"task": "math", "response": "so \\boxed{4}", "reference": "4"}

UNGUARDED = f"""
import assay
print("reward", assay.score([{ITEM!r}])[0].reward, flush=True)
"""

GUARDED = f"""
import assay

if __name__ == "__main__":
    print("reward", assay.score([{ITEM!r}])[0].reward, flush=True)
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env.update({"ASSAY_WORKERS": "2", "PYTHONPATH": os.pathsep.join([src, str(TESTS)]), **extra})
    return env


@pytest.mark.parametrize("source", [UNGUARDED, GUARDED], ids=["unguarded", "guarded"])
def test_a_plain_script_scores_once_and_exits(tmp_path: Path, source: str) -> None:
    script = tmp_path / "first.py"
    script.write_text(source)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=_env(), check=False
    )
    assert done.returncode == 0, done.stderr
    # Printed once: the workers did not re-run the script's top level.
    assert done.stdout.splitlines() == ["reward 1.0"]


def test_a_script_run_as_a_module_is_not_re_run_by_the_workers(tmp_path: Path) -> None:
    (tmp_path / "first_module.py").write_text(UNGUARDED)
    done = subprocess.run(
        [sys.executable, "-m", "first_module"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["reward 1.0"]


def _wait_for(predicate: object, what: str, attempts: int = 600) -> None:
    pause = threading.Event()
    for _ in range(attempts):  # bounded polling, 0.1 s apart
        if predicate():  # type: ignore[operator]
            return
        pause.wait(0.1)
    raise AssertionError(f"gave up waiting: {what}")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_killing_the_script_mid_run_leaves_no_process_behind(tmp_path: Path) -> None:
    flag = tmp_path / "started"
    item = {"task": "hold", "response": "a", "options": {"flag": str(flag)}}
    script = tmp_path / "held.py"
    script.write_text(f"import assay\nassay.score([{item!r}])\n")
    env = _env(ASSAY_PLUGINS=json.dumps(["assay_test_plugins:HoldScorer"]), ASSAY_DEADLINE_S="600")
    parent = subprocess.Popen([sys.executable, str(script)], env=env, stderr=subprocess.DEVNULL)
    try:
        _wait_for(flag.exists, "the item to start in a worker")
        tree = psutil.Process(parent.pid).children(recursive=True)
        assert len(tree) >= 3, tree  # at least the forkserver and two workers
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        _wait_for(lambda: all(_gone(p.pid) for p in tree), "every worker to exit with its parent", 300)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
