"""One sandbox runtime location that every surface finds (issue 43): `make sandbox-runtime` builds where
`assay sandbox-runtime` does, the user cache, and the server, `assay score`, the in-process `assay.score`
and repo tasks all read it when no prefix is set. Before, the Makefile built `.sandbox-runtime/python`,
which only `make serve` was pointed at: elsewhere a correct numpy program scored `runtime_error`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from assay_testing import bwrap_works, reachable_by_sandboxes

from assay.sandbox import runtime_build
from assay.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
NUMPY_ITEM = {
    "task": "code",
    "response": "```python\nimport numpy as np\nprint(int(np.sum([1, 2])))\n```",
    "tests": [{"stdout": "3"}],
}


@pytest.fixture
def no_prefix_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment of a user who set nothing: the default location decides."""
    for name in [n for n in os.environ if n.startswith(("ASSAY_CODE__", "ASSAY_REPO__"))]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)


def test_make_sandbox_runtime_built_the_location_every_surface_reads(no_prefix_set: None) -> None:
    linked = ROOT / ".sandbox-runtime" / "python"
    assert linked.is_symlink(), "make sandbox-runtime links .sandbox-runtime/python to the user cache"
    assert linked.resolve() == runtime_build.default_target().resolve()
    assert runtime_build.is_current(runtime_build.default_target(), runtime_build.packages_file())


def test_assay_score_on_the_command_line_finds_it(no_prefix_set: None, tmp_path: Path) -> None:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    command = [sys.executable, "-m", "assay.cli", "score", "-", "-o", "-"]
    line = json.dumps(NUMPY_ITEM) + "\n"
    done = subprocess.run(command, input=line, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reward"] == 1.0


def test_the_in_process_score_finds_it(no_prefix_set: None) -> None:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    import assay

    (result,) = assay.score([NUMPY_ITEM])
    assert (result.status.value, result.reward) == ("ok", 1.0), result.reason


def test_repo_tasks_find_it(no_prefix_set: None) -> None:
    from assay.verifiers.repo.scorer import prefix_for

    assert Path(prefix_for(Settings())).resolve() == runtime_build.default_target().resolve()


def test_a_runtime_built_from_an_older_package_list_is_rebuilt_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "runtime"
    target.mkdir()
    (target / runtime_build.MARKER).write_text("numpy==1.0\n")
    requirements = tmp_path / "packages.txt"
    requirements.write_text("numpy==2.0\n")
    assert runtime_build.is_built(target) and not runtime_build.is_current(target, requirements)
    calls: list[list[str]] = []

    def pip(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        Path(argv[argv.index("--target") + 1]).mkdir()
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(runtime_build, "sandbox_python_version", lambda: "3.11")
    monkeypatch.setattr(runtime_build.subprocess, "run", pip)
    assert runtime_build.build(target, requirements=requirements) == target
    assert len(calls) == 1 and runtime_build.is_current(target, requirements)
    runtime_build.build(target, requirements=requirements)
    assert len(calls) == 1  # current now: kept


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root server drops sandboxes to another uid")
def test_a_prefix_the_sandbox_user_cannot_reach_is_a_clear_error_not_dead_slots(tmp_path: Path) -> None:
    """Root's home is 0700: a runtime built there made every slot die with "peer closed the control
    pipe"; now the prefix is refused with the directory named and the way out."""
    from assay.sandbox.runtime import check_prefix

    reachable_by_sandboxes(tmp_path)
    private = tmp_path / "home"
    prefix = private / ".cache" / "runtime"
    prefix.mkdir(parents=True)
    private.chmod(0o700)
    with pytest.raises(ValueError, match=f"inside {private}, .*cannot enter"):
        check_prefix(prefix)
    private.chmod(0o755)
    assert check_prefix(prefix) == str(prefix)
