"""Run a working copy's tests in a bubblewrap sandbox and read the signed per-test report.

One sandbox per run, started with the working copy bound writable at /repo (the only host directory it
may write), the package prefix (pytest and the runtime's packages) and the repository's own dependencies
(`dependencies`) read-only, no network, the seccomp filter, cgroup and rlimit limits: `assay.sandbox.bwrap`.
pytest runs as `python3 -B -S -s -P -c 'import _assay_repo_reporter as r, pytest; pytest.main(...,
plugins=[r])' ...` with only the reporter's directory and the prefix on `PYTHONPATH` (`-P`: the
working directory is not put first, so a `pytest.py`, `_pytest/` or `json.py` in the change cannot stand
in for pytest or its imports); the reporter adds the working copy's directories to `sys.path` once it has
loaded. Plugin autoloading is off (an entry point in a `.dist-info` the change adds is never loaded), and
so is the cache provider. The configuration is the one Assay names with `-c`: the base's own file (put
back after the change) or none (`/dev/null`), so no file the change adds or edits is read as pytest
configuration (issue 37); `--confcutdir` is set with it. No bytecode is written (`-B`); the copy has none
to read (`workcopy` drops the base's, `patch` refuses a change that adds any), and where a task allows
compiled files, bytecode is read only from a private, empty `PYTHONPYCACHEPREFIX`, never a `__pycache__`
of the copy.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.sandbox.base import Limits

REPORTER_DIR = "/tmp/.assay"
REPORTER_MODULE = "_assay_repo_reporter"
# The reporter is imported before pytest starts: pytest 9 applies the configuration's `filterwarnings`
# while it imports `-p` plugins, and a filter naming the project's own warning class (bleach's
# `ignore::bleach.sanitizer.NoCssSanitizerWarning`) imports the project then. Imported first, the reporter
# holds its key and has put the copy on sys.path before that import. It is handed to pytest as a plugin
# object: a `-p` of a module already imported warns, and `filterwarnings = error` makes that fatal.
_START = f"import sys, {REPORTER_MODULE} as r, pytest; sys.exit(pytest.main(sys.argv[1:], plugins=[r]))"
PYCACHE = "/tmp/.assay-pycache"
# No tracebacks and no summary on the terminal, after the task's own arguments so they win: nobody reads
# that output for the verdict, and the canaries fail by design, dozens or hundreds of times where the
# FAIL_TO_PASS tests are parametrised (inflection's: 342 failures, 3-4 s of pytest formatting tracebacks
# against a 0.6 s suite; issue 37 item 5). Each failure's report still carries its `E` lines (the
# assertion and its explanation), which `details.failures` shows.
_QUIET = ("--tb=no", "-rN")
_names = itertools.count()


@dataclass(frozen=True)
class TestRun:
    """What to run: pytest's extra arguments, the files to collect, the node ids to keep."""

    __test__ = False  # not a pytest test class

    files: tuple[str, ...]
    wanted: tuple[str, ...]
    pytest_args: tuple[str, ...] = ()
    python_path: tuple[str, ...] = ()  # directories of the working copy, relative, ahead of its root
    prefixes: tuple[str, ...] = ()  # node ids kept with their parametrised cases (the canaries)
    cases: tuple[tuple[str, tuple[str, ...]], ...] = ()  # per prefix, the `[param]` cases kept (else all)
    config: str | None = None  # the base's pytest configuration file, relative; None: none at all
    collect_only: bool = False
    # Bytecode only from a private, empty PYTHONPYCACHEPREFIX: for changes allowed to carry compiled
    # files (`allow_compiled`). Otherwise the copy holds no bytecode (the base's is dropped, a change with
    # any is refused), and the prefix's and environment's own `__pycache__` (compiled by pip, read-only)
    # spare each run compiling pytest again: about 0.5 s an item, measured here (issue 37 item 5).
    private_bytecode: bool = True


@dataclass
class Report:
    """Per-test outcomes from the signed report, and what else the run left behind."""

    outcomes: dict[str, str] = field(default_factory=dict)  # node id -> passed/failed/error/...
    texts: dict[str, str] = field(default_factory=dict)  # node id -> failure text (tail)
    collect_errors: list[str] = field(default_factory=list)
    started: bool = False  # the reporter loaded (pytest itself started)
    collected: bool = False  # collection ended (the tests it kept are in `wanted`)
    collected_ids: list[str] = field(default_factory=list)
    finished: bool = False
    tampered: str | None = None  # why the report cannot be trusted (a line the key did not sign)
    run: dict[str, Any] = field(default_factory=dict)  # exit code, times, killed, output tails

    def passed(self, node_id: str) -> bool:
        return self.outcomes.get(node_id) in ("passed", "xfailed")


def _outcome(phases: dict[str, str]) -> str:
    if phases.get("setup") != "passed":
        return "skipped" if phases.get("setup") == "skipped" else "error"
    call = phases.get("call", "missing")
    if phases.get("teardown") != "passed" and call in ("passed", "xfailed"):
        return "error"
    return call


def parse_report(data: bytes, key: bytes) -> Report:
    """The report from fd 3's lines; the first line with a bad MAC or sequence marks it tampered."""
    report = Report()
    for seq, raw in enumerate(data.decode("utf-8", "replace").splitlines()):
        mac, _, line = raw.partition(" ")
        good = hmac.new(key, f"{seq}:{line}".encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(mac, good):
            report.tampered = f"report line {seq} was not written by the reporter"
            return report
        record = json.loads(line)
        if "test" in record:
            report.outcomes[record["test"]] = _outcome(record["phases"])
            text = (
                record.get("text") or record["phases"].get("call_text") or record["phases"].get("setup_text")
            )
            if text:
                report.texts[record["test"]] = text
        elif "collected" in record:
            report.collected = True
            report.collected_ids = list(record["collected"])
        elif "collect_error" in record:
            report.collect_errors.append(f"{record['collect_error']}: {record.get('text', '')[-500:]}")
        elif "hello" in record:
            report.started = True
        elif "end" in record:
            report.finished = True
    return report


def keep_ids(test: TestRun) -> list[str]:
    """The node ids the reporter keeps: the wanted tests and each canary's listed cases (a bare id: all
    of them), in one sorted list that does not say which is which (the code under test can read it)."""
    cases = dict(test.cases)
    canaries = [p + case for p in test.prefixes for case in (cases.get(p) or ("",))]
    return sorted({*test.wanted, *canaries})


def repo_paths(test: TestRun, env: bool = False) -> list[str]:
    """The working copy's import directories, in order, then the repository's own dependencies (`env`):
    the reporter puts them on sys.path after the package prefix. After the copy, so the code under test
    is always the copy's, even where a dependency installed the project too; after the prefix, so pytest
    is always the one Assay checked (a repository's pins of packages the prefix holds do not apply)."""
    from assay.sandbox import bwrap, runtime

    paths = [f"{bwrap.WORKDIR_MOUNT}/{p}".rstrip("/.") for p in test.python_path]
    return list(dict.fromkeys([*paths, bwrap.WORKDIR_MOUNT, *([runtime.ENV_MOUNT] if env else [])]))


def pytest_argv(test: TestRun) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of the pytest process inside the sandbox."""
    from assay.sandbox import bwrap, runtime

    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": "/tmp",
        "PYTHONPATH": f"{REPORTER_DIR}:{runtime.PREFIX_MOUNT}",
        "PYTHONDONTWRITEBYTECODE": "1",
        **({"PYTHONPYCACHEPREFIX": PYCACHE} if test.private_bytecode else {}),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        **runtime.THREAD_ENV,
    }
    root = bwrap.WORKDIR_MOUNT
    config = f"{root}/{test.config}" if test.config else "/dev/null"
    confcut = f"{root}/{test.config}".rsplit("/", 1)[0] if test.config else root
    argv = [bwrap.SANDBOX_PYTHON, "-B", "-S", "-s", "-P", "-c", _START]
    argv += ["-p", "no:cacheprovider", "-c", config, "--rootdir", root, "--confcutdir", confcut]
    argv += [*test.pytest_args, *_QUIET, *(["--collect-only", "-q"] if test.collect_only else []), "--"]
    return [*argv, *test.files], env


def run_tests(
    workdir: Path,
    test: TestRun,
    limits: Limits,
    bwrap_path: str,
    prefix: str | None,
    dependencies: str | None = None,
) -> Report:
    """Run pytest over the working copy in a fresh sandbox, with the repository's own dependency
    directory `dependencies` mounted read-only; SandboxError when the sandbox fails."""
    from assay.sandbox import bwrap, runtime, seccomp

    config = bwrap.BwrapConfig(
        bwrap=bwrap_path,
        use_seccomp=seccomp.available(),
        processes=limits.processes,
        python_prefix=prefix,
        workdir=str(workdir),
        env_prefix=dependencies,
    )
    slot = bwrap.BwrapSlot(config, f"repo-{os.getpid()}-{next(_names)}")
    try:
        source = (Path(__file__).parent / "_reporter.py").read_bytes()
        slot.write_files({f"{REPORTER_DIR}/{REPORTER_MODULE}.py": source})
        key = secrets.token_bytes(32)
        argv, env = pytest_argv(test)
        spec = {"key": key.hex(), "keep": keep_ids(test), "prefix": runtime.PREFIX_MOUNT}
        blob = json.dumps({**spec, "paths": repo_paths(test, dependencies is not None)}).encode()
        request = {"argv": argv, "env": env, "cwd": bwrap.WORKDIR_MOUNT}
        outcome = slot.run(request, blob, limits)
    finally:
        slot.close()
    report = parse_report(outcome.result, key)
    report.run = {
        **outcome.details(),
        "command": shlex.join(["pytest", *argv[7:]]),
        "stdout_tail": outcome.stdout[-3000:].decode("utf-8", "replace"),
        "stderr_tail": outcome.stderr[-2000:].decode("utf-8", "replace"),
    }
    return report
