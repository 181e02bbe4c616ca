"""The docker backend: one long-lived container per slot running the same warm runtime (`_runner`).

For hosts where bubblewrap is not an option. The container gets no network, every capability dropped,
`no-new-privileges`, a read-only root, a size-capped tmpfs at /tmp, memory (swap included) and pids
limits, and an unprivileged user; the runtime applies the same per-test rlimits and sweeps as under
bwrap. The `docker` SDK is imported only when a slot starts (install `assay[docker]`).

Tested only without an engine (no Docker engine exists on the development machines): the container
options and the attach-stream demultiplexer have unit tests; starting a container does not. Differences
from bwrap: docker's default seccomp profile instead of ours, so signals to the runtime are not
filtered; the runtime's pid is 1 in the container (`init=False`).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import struct
import threading
from dataclasses import dataclass
from typing import Any

from assay.errors import MissingExtraError
from assay.sandbox import _runner, runtime
from assay.sandbox.base import Limits, RunOutcome, SandboxError

_STREAM_HEADER = struct.Struct(">BxxxI")  # docker's attach framing: stream id, 3 pad bytes, length


@dataclass(frozen=True)
class DockerConfig:
    image: str = "python:3.11-slim"
    tmpfs_mb: int = 256
    memory_mb: int = 1024
    processes: int = 64
    user: str = "65534:65534"
    python_prefix: str | None = None  # a host directory the docker daemon can see


def container_options(config: DockerConfig, name: str) -> dict[str, Any]:
    """Keyword arguments of `containers.run` for one slot (pure: unit-tested without an engine)."""
    memory = f"{config.memory_mb}m"
    volumes = {
        runtime.runner_path(): {"bind": runtime.RUNNER_MOUNT, "mode": "ro"},
        runtime.harness_path(): {"bind": runtime.HARNESS_MOUNT, "mode": "ro"},
    }
    if config.python_prefix is not None:
        volumes[config.python_prefix] = {"bind": runtime.PREFIX_MOUNT, "mode": "ro"}
    return {
        "image": config.image,
        "command": runtime.runner_argv("python3"),
        "volumes": volumes,
        "name": name.replace("/", "-"),
        "detach": True,
        "stdin_open": True,
        "tty": False,
        "network_disabled": True,
        "network_mode": "none",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "read_only": True,
        "tmpfs": {"/tmp": f"size={config.tmpfs_mb}m,mode=1777"},
        "mem_limit": memory,
        "memswap_limit": memory,
        "pids_limit": config.processes + 4,
        "user": config.user,
        "environment": {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": "/tmp",
            **runtime.THREAD_ENV,
        },
        "working_dir": "/tmp",
        "auto_remove": True,
        "ulimits": [],
    }


class DemuxReader(io.RawIOBase):
    """Reads the stdout payload out of docker's multiplexed attach stream (stderr frames dropped)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def _read_exact(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self._raw.recv(size - len(data)) if hasattr(self._raw, "recv") else self._raw.read(size)
            if not chunk:
                raise EOFError("container closed its stream")
            data += chunk
        return data

    def readinto(self, target: Any) -> int:
        while not self._buffer:
            try:
                stream, length = _STREAM_HEADER.unpack(self._read_exact(_STREAM_HEADER.size))
            except EOFError:
                return 0
            payload = self._read_exact(length)
            if stream == 1:
                self._buffer = payload
        size = min(len(target), len(self._buffer))
        target[:size] = self._buffer[:size]
        self._buffer = self._buffer[size:]
        return size


class DockerSlot:
    def __init__(self, config: DockerConfig, name: str) -> None:
        try:
            docker = importlib.import_module("docker")  # the SDK, not this module
        except ImportError as exc:
            raise MissingExtraError("docker", "docker") from exc
        self.submissions = 0
        self.oom_seen = False
        self.name = name
        try:
            self._client = docker.from_env()
            self._container = self._client.containers.run(**container_options(config, name))
            self._socket = self._container.attach_socket(params={"stdin": 1, "stdout": 1, "stream": 1})
        except Exception as exc:  # the SDK raises many types; all mean "no slot"
            raise SandboxError(f"cannot start docker slot {name}: {exc}") from exc
        sock = getattr(self._socket, "_sock", self._socket)
        self._out = io.BufferedReader(DemuxReader(sock))
        self._in = sock.makefile("wb")
        self._exchange(None, [], 60.0)

    @property
    def alive(self) -> bool:
        try:
            self._container.reload()
        except Exception:
            return False
        return bool(self._container.status == "running")

    def _exchange(
        self, header: dict[str, Any] | None, blobs: list[bytes], timeout: float
    ) -> tuple[dict[str, Any], list[bytes]]:
        watchdog = threading.Timer(timeout, self.close)
        watchdog.start()
        try:
            if header is not None:
                _runner.write_frame(self._in, header, blobs)
            return _runner.read_frame(self._out)
        except (EOFError, OSError, ValueError) as exc:
            raise SandboxError(f"docker slot {self.name} died: {exc}") from exc
        finally:
            watchdog.cancel()

    def write_files(self, files: dict[str, bytes], mode: int = 0o644) -> None:
        self._exchange({"op": "write", "paths": list(files), "mode": mode}, list(files.values()), 30.0)

    def wipe(self) -> None:
        self._exchange({"op": "wipe", "root": "/tmp"}, [], 30.0)

    def run(
        self,
        request: dict[str, Any],
        stdin: bytes,
        limits: Limits,
        collect: str | None = None,
        sealed: bytes | None = None,
    ) -> RunOutcome:
        header = {"op": "run", **request, "limits": limits.wire(None)}
        if collect:
            header["collect"] = collect
        blobs = [stdin]
        if sealed is not None:  # an assert test's code: see BwrapSlot.run
            header["sealed"], blobs = 1, [stdin, sealed]
        reply, blobs = self._exchange(header, blobs, limits.wall + 30.0)
        if reply.get("leftover"):
            raise SandboxError(f"docker slot {self.name}: processes survived their test")
        return RunOutcome.from_reply(reply, blobs)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._container.kill()
        with contextlib.suppress(Exception):
            self._socket.close()
