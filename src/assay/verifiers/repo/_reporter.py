"""The pytest plugin that reports each test's outcome to the host; runs inside the sandbox only.

Stdlib only, never imported by the server: its source is written into the sandbox's private /tmp and
loaded with `-p` before pytest imports anything of the repository (conftest files and test modules come
later), so the working copy cannot replace it. It reads a run key and the node ids to keep from stdin,
points fd 0 at /dev/null, and writes one line per finished test to fd 3, the runtime's result pipe (not
stdout, not a file): `<hmac-sha256 hex> <json>`, the MAC keyed with the run key over `<seq>:<json>`.
A line the key did not sign, out of sequence, is proof that something else wrote there. What this can
and cannot prove is in docs/repo.md.
"""

import hashlib
import hmac
import json
import os
import sys

import pytest

_SPEC = json.loads(os.read(0, 1 << 24).decode() or "{}")
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
_KEY = bytes.fromhex(_SPEC.get("key", ""))
# One set of node ids to keep, the named tests and the canaries' cases alike, unlabelled: the code under
# test can read anything this module holds, so it must not say which tests are canaries. A bare id (no
# `[params]`) keeps every case of its function.
_KEEP = frozenset(_SPEC.get("keep", []))
_STATE = {"seq": 0}
_PHASES: dict = {}
# The repository's directories join sys.path only now, after the prefix: no module of the working copy
# (a `json.py` shadowing the standard library's) could load before this plugin holds its key.
_AT = sys.path.index(_SPEC["prefix"]) + 1 if _SPEC.get("prefix") in sys.path else len(sys.path)
sys.path[_AT:_AT] = _SPEC.get("paths", [])
del _SPEC


def _emit(record: dict) -> None:
    line = json.dumps(record, sort_keys=True)
    seq = _STATE["seq"]
    _STATE["seq"] = seq + 1
    mac = hmac.new(_KEY, f"{seq}:{line}".encode(), hashlib.sha256).hexdigest()
    os.write(3, f"{mac} {line}\n".encode())


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """Keep only the tests the run names (files were given, so a missing id cannot stop the run)."""
    keep = [item.nodeid in _KEEP or item.nodeid.split("[")[0] in _KEEP for item in items]
    kept = [item for item, wanted in zip(items, keep, strict=True) if wanted]
    config.hook.pytest_deselected(
        items=[item for item, wanted in zip(items, keep, strict=True) if not wanted]
    )
    items[:] = kept
    _emit({"collected": [item.nodeid for item in kept]})


_emit({"hello": True})  # loaded, before any code of the repository


def pytest_collectreport(report):
    if report.failed:
        _emit({"collect_error": report.nodeid, "text": str(report.longrepr)[-2000:]})


def pytest_runtest_logreport(report):
    phases = _PHASES.setdefault(report.nodeid, {})
    outcome = report.outcome
    if report.when == "call" and hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    phases[report.when] = outcome
    if report.when == "teardown":
        text = "" if report.passed else str(report.longrepr)[-2000:]
        _emit({"test": report.nodeid, "phases": _PHASES.pop(report.nodeid), "text": text})
    elif report.failed:
        phases[report.when + "_text"] = str(report.longrepr)[-2000:]


def pytest_sessionfinish(session, exitstatus):
    _emit({"end": int(exitstatus)})
