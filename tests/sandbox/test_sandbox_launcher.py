"""The sandbox's public surface for long-lived programs (`SandboxLauncher`, `SandboxProcess`): a file of
the caller's runs in the code sandbox's layers, started by the runtime, and speaks frames with the host."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from assay_testing import bwrap_works
from sandbox_support import SETTINGS

from assay.sandbox import SandboxError, SandboxLauncher

PROGRAM = """
import os, sys
from sandbox_frames import read_frame, write_frame

inp, out = os.fdopen(0, "rb"), os.fdopen(1, "wb")
hello, _ = read_frame(inp)
write_frame(out, {"pid": os.getpid()})
header, blobs = read_frame(inp)  # EOFError when the host closes the pipe: the program ends
while header.get("op") != "exit":
    seen = {"hello": hello, "uid": os.getuid(), "argv": sys.argv, "name": __name__, "file": __file__}
    seen["assay"] = sorted(name for name in sys.modules if name.startswith("assay"))
    write_frame(out, seen, [blob[::-1] for blob in blobs])
    header, blobs = read_frame(inp)
os._exit(3)
"""


@pytest.fixture
def launcher() -> Iterator[SandboxLauncher]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    started = SandboxLauncher(SETTINGS, f"assay/test-launcher-{os.getpid()}")
    yield started
    started.close()


@pytest.fixture
def program(tmp_path: Path) -> str:
    path = tmp_path / "echo.py"
    path.write_text(PROGRAM)
    return str(path)


def test_a_program_reads_its_hello_and_answers_frames(launcher: SandboxLauncher, program: str) -> None:
    process = launcher.start("echo", program, hello={"limits": {"cpu_s": 1}}, memory_mb=128)
    try:
        reply, blobs = process.exchange({"op": "echo"}, [b"abc", b""], timeout=30)
        assert blobs == [b"cba", b""]
        assert reply["hello"] == {"limits": {"cpu_s": 1}}  # read before the program said it was ready
        assert reply["uid"] == 1000 and reply["name"] == "__main__"  # the sandbox's uid, run as a script
        assert reply["file"] == reply["argv"][0] == "/opt/assay/program.py"  # mounted, not the host path
        assert reply["assay"] == []  # only the runtime's stdlib codec, never the host's package
        assert process.alive
    finally:
        process.close()
    assert not process.alive


def test_a_program_that_dies_is_a_sandbox_error(launcher: SandboxLauncher, program: str) -> None:
    process = launcher.start("dies", program, hello={})
    try:
        with pytest.raises(SandboxError, match="died or hung"):
            process.exchange({"op": "exit"}, [], timeout=30)
    finally:
        process.close()
    assert not process.alive


def test_a_bad_package_prefix_is_a_sandbox_error_before_anything_starts(tmp_path: Path) -> None:
    settings = SETTINGS.model_copy(update={"python_prefix": str(tmp_path / "missing")})
    with pytest.raises(SandboxError, match="is not a directory"):
        SandboxLauncher(settings, "assay/never")
