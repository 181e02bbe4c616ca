"""Which pytest configuration a working copy holds, as pytest itself reads it (issue 37).

pytest 9 reads `pytest.toml` and `.pytest.toml` besides `pytest.ini`, `.pytest.ini`, `pyproject.toml`,
`tox.ini` and `setup.cfg`, and its ini parser splits lines differently from `configparser`; a scan that
re-implements either misses configuration pytest sees. So the scan asks pytest: a host process (the
sandbox's `python3` with the package prefix, so the same pytest the tests run with) calls
`_pytest.config.findpaths.determine_setup` for the file pytest would pick and
`load_config_dict_from_file` for what each named file holds. It only parses files (TOML and ini): no
code of the repository runs. The test run itself never discovers configuration (`run`: `-c`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_ASK = """
import json, sys
from pathlib import Path
from _pytest.config import findpaths as f
root = Path(sys.argv[1]).resolve()
req = json.loads(sys.stdin.read())
out = {"names": list(f.CONFIG_LOADERS_BY_NAME), "states": {}}
try:
    _, ini, _, _ = f.determine_setup(inifile=None, override_ini=None,
        args=[str(root / a) for a in req["args"]], rootdir_cmd_arg=str(root), invocation_dir=root)
    inside = ini is not None and ini.resolve().is_relative_to(root)
    out["inifile"] = str(ini.resolve().relative_to(root)) if inside else None
except Exception as exc:
    out["inifile"] = "unreadable: %s" % exc
for p in req["paths"]:
    try:
        d = f.load_config_dict_from_file(root / p) if (root / p).is_file() else None
        out["states"][p] = None if d is None else repr(sorted((k, repr(v)) for k, v in d.items()))
    except Exception as exc:
        out["states"][p] = "unreadable: %s" % exc
print(json.dumps(out))
"""


@dataclass(frozen=True)
class PytestConfig:
    """What pytest reads in a working copy: the file it picks (relative; None: none, or one outside the
    copy), the names it looks for, and the configuration each asked-about file holds (None: none)."""

    inifile: str | None
    names: tuple[str, ...]
    states: dict[str, str | None]


def ask_pytest(copy: Path, args: Iterable[str], paths: Iterable[str], prefix: str) -> PytestConfig:
    """pytest's own answer for `copy` with the test files `args`; OSError when it cannot be asked."""
    request = json.dumps({"args": list(args), "paths": list(paths)})
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": prefix, "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        done = subprocess.run(
            ["/usr/bin/python3", "-S", "-s", "-P", "-c", _ASK, str(copy)],
            input=request,
            capture_output=True,
            text=True,
            env=env,
            cwd=copy.parent,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"pytest could not be asked for the configuration: {exc}") from exc
    if done.returncode != 0:
        raise OSError(f"pytest could not be asked for the configuration: {done.stderr.strip()[-500:]}")
    out = json.loads(done.stdout)
    inifile = out["inifile"]
    if inifile is not None and inifile.startswith("unreadable: "):
        inifile = None  # pytest itself would stop at it; the run uses none and the flag says why
    return PytestConfig(inifile, tuple(out["names"]), out["states"])


def config_named(paths: Iterable[str], names: Iterable[str]) -> list[str]:
    """The paths pytest would consider as configuration by their name (in any directory)."""
    known = set(names)
    return [p for p in paths if PurePosixPath(p).name in known]


def config_flags(before: PytestConfig, after: PytestConfig, named: Iterable[str]) -> list[str]:
    """`edits_test_config:<path>` for each file of `named` (config names) whose pytest configuration the
    change altered (pytest reads something different there), and for a change of the file pytest picks."""
    flags = [f"edits_test_config:{p}" for p in named if before.states.get(p) != after.states.get(p)]
    if before.inifile != after.inifile:
        flags.append(f"edits_test_config:{after.inifile or before.inifile}")
    return list(dict.fromkeys(flags))


class PytestAsker:
    """`ask_pytest` for one package prefix, with the answers that depend only on files kept: the names
    pytest reads are asked once, and a copy's answer is reused for another copy whose files under those
    names (and test files asked about) are byte for byte the same. Asking costs a Python start and
    pytest's import (about 0.3 s, over 1 s on a loaded host); most items share their base's answer."""

    def __init__(self, prefix: str, size: int = 256) -> None:
        self.prefix = prefix
        self._size = size
        self._lock = threading.Lock()
        self._names: tuple[str, ...] | None = None
        self._answers: dict[tuple[str, ...], PytestConfig] = {}

    def ask(self, copy: Path, args: Iterable[str], paths: Iterable[str]) -> PytestConfig:
        args, paths = list(args), list(paths)
        if self._names is None or config_named(paths, self._names):
            answer = ask_pytest(copy, args, paths, self.prefix)
            self._names = answer.names
            if not config_named(paths, answer.names):  # as if asked about no path: the next copy's too
                self._keep(
                    (*args, _digest(copy, answer.names)), PytestConfig(answer.inifile, answer.names, {})
                )
            return answer
        key = (*args, _digest(copy, self._names))
        with self._lock:
            known = self._answers.get(key)
        if known is not None:
            return known
        answer = ask_pytest(copy, args, [], self.prefix)
        self._keep(key, answer)
        return answer

    def _keep(self, key: tuple[str, ...], answer: PytestConfig) -> None:
        with self._lock:
            if len(self._answers) >= self._size:
                self._answers.pop(next(iter(self._answers)))
            self._answers[key] = answer


def _digest(copy: Path, names: tuple[str, ...]) -> str:
    """A digest of every file under `copy` named as pytest configuration (path and bytes)."""
    wanted = set(names)
    digest = hashlib.sha256()
    for top, dirs, files in os.walk(copy):
        dirs.sort()
        for name in sorted(f for f in files if f in wanted):
            path = Path(top) / name
            digest.update(str(path.relative_to(copy)).encode() + b"\0")
            with contextlib.suppress(OSError):
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
