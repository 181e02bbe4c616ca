"""`BwrapConfig.workdir`: one host directory bound writable at /repo (repository tasks, issue 27)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from assay_testing import bwrap_works
from sandbox_support import LIMITS

from assay.sandbox.bwrap import WORKDIR_MOUNT, BwrapConfig, BwrapSlot, find_bwrap

PROBE = """
import os
open("/repo/written.txt", "w").write("from the sandbox")
for path in ("/", "/usr", "/opt"):
    try:
        open(os.path.join(path, "planted"), "w")
        print("wrote", path)
    except OSError:
        pass
print(sorted(os.listdir("/repo")))
"""


def _run(workdir: Path | None, source: str) -> bytes:
    config = BwrapConfig(bwrap=find_bwrap(), workdir=str(workdir) if workdir else None)
    slot = BwrapSlot(config, f"workdir-test-{os.getpid()}")
    try:
        slot.write_files({"/tmp/main.py": source.encode()})
        argv = ["/usr/bin/python3", "-I", "-S", "/tmp/main.py"]
        outcome = slot.run({"argv": argv, "env": {}, "cwd": "/tmp"}, b"", LIMITS)
    finally:
        slot.close()
    assert outcome.exit_code == 0, outcome.stderr
    return outcome.stdout


@pytest.fixture(autouse=True)
def _needs_bwrap() -> None:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")


@pytest.fixture
def holder() -> Iterator[Path]:
    """A directory the slot's uid may pass through (pytest's own tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="assay-workdir-test-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path)


def test_the_working_copy_is_the_one_writable_host_directory(holder: Path) -> None:
    tmp_path = holder
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "base.txt").write_text("base")
    out = _run(copy, PROBE)
    assert out == b"['base.txt', 'written.txt']\n"  # nothing but /repo was writable
    assert (copy / "written.txt").read_text() == "from the sandbox"
    assert not (tmp_path / "planted").exists()


def test_without_a_workdir_there_is_no_repo_mount() -> None:
    out = _run(None, f"import os\nprint(os.path.exists({WORKDIR_MOUNT!r}))")
    assert out == b"False\n"


def test_a_linked_workdir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OSError):
        _run(tmp_path / "link", "print(1)")
