"""The docker backend without an engine: container options, the attach demultiplexer, lazy import."""

from __future__ import annotations

import io
import struct
import sys

import pytest

from assay.sandbox import _runner
from assay.sandbox.docker import DemuxReader, DockerConfig, DockerSlot, container_options


def test_container_is_locked_down() -> None:
    opts = container_options(DockerConfig(tmpfs_mb=32, memory_mb=256, processes=16), "pool-1/slot-0")
    assert opts["network_disabled"] and opts["network_mode"] == "none"
    assert opts["cap_drop"] == ["ALL"] and "no-new-privileges" in opts["security_opt"]
    assert opts["read_only"] and opts["tmpfs"]["/tmp"].startswith("size=32m")
    assert opts["mem_limit"] == opts["memswap_limit"] == "256m"
    assert opts["pids_limit"] == 20 and opts["user"] != "root" and "/" not in opts["name"]


def test_runtime_and_prefix_are_read_only_mounts_not_arguments() -> None:
    opts = container_options(DockerConfig(python_prefix="/srv/prefix"), "pool-1/slot-0")
    assert opts["command"] == ["python3", "-I", "-S", "/opt/assay/runner.py"]
    volumes = opts["volumes"]
    assert volumes["/srv/prefix"] == {"bind": "/opt/assay/python", "mode": "ro"}
    runner = [spec for spec in volumes.values() if spec["bind"] == "/opt/assay/runner.py"]
    assert runner == [{"bind": "/opt/assay/runner.py", "mode": "ro"}]


def frame(stream: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(payload)) + payload


def test_demux_keeps_stdout_frames_only() -> None:
    out = io.BytesIO()
    _runner.write_frame(out, {"ok": True}, [b"\x00\xff"])
    data = out.getvalue()
    stream = frame(1, data[:5]) + frame(2, b"noise on stderr") + frame(1, data[5:])
    header, blobs = _runner.read_frame(io.BufferedReader(DemuxReader(io.BytesIO(stream))))
    assert header == {"ok": True} and blobs == [b"\x00\xff"]


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docker", None)
    with pytest.raises(ImportError, match=r"assay\[docker\]"):
        DockerSlot(DockerConfig(), "slot")
