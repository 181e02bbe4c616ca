"""What a sandboxed program can use: the runtime file, the Python package prefix, the host paths hidden.

The warm runtime (`_runner.py`) is mounted read-only into each sandbox as a file and started by path, so
process listings show a short command line, not its source. Python programs see the standard library
plus one package prefix of our own (`make sandbox-runtime` builds it with numpy, scipy, pandas, sympy,
networkx, sortedcontainers; `code.python_prefix` chooses another; unset, the one `assay sandbox-runtime`
built in the user's cache, if any), mounted read-only at `PREFIX_MOUNT`.
The host's own site/dist-packages are masked with empty read-only mounts: what a program may import does
not depend on what happens to be installed on the server.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assay.sandbox import _harness, _runner
from assay.sandbox.languages import LANGUAGES

RUNNER_MOUNT = "/opt/assay/runner.py"
PROGRAM_MOUNT = "/opt/assay/program.py"  # a program the runtime starts in its place (`_runner.launch`)
HARNESS_MOUNT = _runner.HARNESS  # the assert-test harness, loaded by the runner (`_harness`)
PREFIX_MOUNT = _runner.PACKAGES
ENV_MOUNT = "/opt/assay/env"  # a repository's own dependencies (repo tasks), read-only, after its code
# Where a host Python keeps installed packages; every match under /usr is hidden from the sandbox.
_SITE_GLOBS = (
    "/usr/lib/python3/dist-packages",
    "/usr/lib/python3*/dist-packages",
    "/usr/lib/python3*/site-packages",
    "/usr/local/lib/python3*/dist-packages",
    "/usr/local/lib/python3*/site-packages",
)
# One thread per numeric library: a test's CPU limit counts every thread, and a slot has few cores.
THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
NO_PACKAGES_HINT = (
    "sandboxed Python has the standard library only: a program importing numpy, scipy or pandas fails as"
    " runtime_error; `assay sandbox-runtime` (or `make sandbox-runtime`) builds them"
)
# The last line of a traceback for an import the runtime cannot satisfy.
_MISSING = re.compile(r"^ModuleNotFoundError: No module named '(?P<name>[A-Za-z_][\w.]{0,80})'$")
_PINNED = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)\s*(?:[=<>!~]=|$)")
_DIST_INFO = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)\.dist-info$")


def runner_path() -> str:
    """The host path of the runtime file that every slot mounts."""
    return str(Path(_runner.__file__).resolve())


def harness_path() -> str:
    """The host path of the harness file that every slot mounts beside the runtime."""
    return str(Path(_harness.__file__).resolve())


def runner_argv(python: str = "/usr/bin/python3", program: bool = False) -> list[str]:
    """How a slot starts its runtime: isolated (-I) and without `site` (-S), so no host packages load;
    with `program`, the runtime starts the program mounted at PROGRAM_MOUNT instead of serving tests."""
    return [python, "-I", "-S", RUNNER_MOUNT, *([PROGRAM_MOUNT] if program else [])]


def hidden_site_dirs() -> list[str]:
    """The host's site/dist-packages directories that the sandbox must not see."""
    found = {path for pattern in _SITE_GLOBS for path in glob.glob(pattern)}
    return sorted(p for p in found if os.path.isdir(p) and not os.path.islink(p))


def default_prefix() -> str | None:
    """The runtime `assay sandbox-runtime` built in the user's cache, if it finished; else None."""
    from assay.sandbox import runtime_build

    try:
        target = runtime_build.default_target()
    except (OSError, subprocess.SubprocessError):  # no /usr/bin/python3: no sandboxed Python at all
        return None
    return str(target) if runtime_build.is_built(target) else None


def check_prefix(prefix: str | os.PathLike[str] | None) -> str | None:
    """The prefix as an absolute path; unset, the default runtime if one was built, else None (the
    standard library only). A missing directory is a configuration error."""
    if prefix is None:
        return default_prefix()
    path = Path(prefix).expanduser().resolve()
    if not path.is_dir():
        raise ValueError(
            f"code.python_prefix {str(prefix)!r} is not a directory; build one with"
            f" `assay sandbox-runtime --target {prefix}`"
        )
    if (closed := closed_to_others(path)) is not None:
        raise ValueError(
            f"code.python_prefix {str(path)!r} is inside {closed}, which the sandbox's unprivileged user"
            " cannot enter (it needs o+x); build the runtime elsewhere (`assay sandbox-runtime` uses"
            " /var/cache/assay for root) or `chmod o+x` that directory"
        )
    return str(path)


def closed_to_others(path: Path) -> Path | None:
    """The first directory on the way to `path` that others may not traverse, if any, when this server
    runs as root (else None): a root server drops each sandbox to an unprivileged uid, and bwrap cannot
    mount a directory that uid cannot reach."""
    if os.geteuid() != 0:
        return None
    for directory in [*reversed(path.parents), path]:
        if directory.exists() and not os.stat(directory).st_mode & stat.S_IXOTH:
            return directory
    return None


def prefix_packages(prefix: str | None) -> dict[str, str]:
    """Distribution name -> version of what the prefix holds (read from its .dist-info folders)."""
    if prefix is None or not os.path.isdir(prefix):
        return {}
    packages = {}
    for entry in sorted(os.listdir(prefix)):
        match = _DIST_INFO.match(entry)
        if match:
            packages[match["name"].lower().replace("_", "-")] = match["version"]
    return packages


@functools.cache
def _tool_version(argv: tuple[str, ...]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0] if text else None


_VERSION_ARGV = {
    "python": ("/usr/bin/python3", "--version"),
    "cpp": ("g++", "-dumpfullversion"),
    "javascript": ("node", "--version"),
    "java": ("javac", "-version"),
    "rust": ("rustc", "--version"),
    "go": ("go", "version"),
}


def offered(prefix: str | None) -> dict[str, dict[str, Any]]:
    """Per available language: its toolchain's version and (Python) the packages a program may import
    (`standard_library_only`, with how to get more, when there are none)."""
    prefix = prefix if prefix is not None else default_prefix()
    languages: dict[str, dict[str, Any]] = {}
    for language in dict.fromkeys(LANGUAGES.values()):
        if not language.available():
            continue
        tool = _VERSION_ARGV[language.name]
        entry: dict[str, Any] = {"version": _tool_version(tool), "aliases": list(language.aliases)}
        if language.name == "python":
            entry["packages"] = prefix_packages(prefix)
            if not entry["packages"]:
                entry["standard_library_only"] = True
                entry["hint"] = NO_PACKAGES_HINT
        languages[language.name] = entry
    return languages


def missing_module(details: dict[str, Any], prefix_holds: Iterable[str] = ()) -> str | None:
    """The top-level package a failed Python test could not import, from the end of its stderr; None
    when no test failed that way.

    Tells a package the runtime lacks from a wrong program (issue 31): the standard library and what
    the prefix holds are never "missing" (an import of one that fails is the program's own doing).
    Diagnostic only: a program can print this line itself, and the verdict does not depend on it."""
    have = {name.lower().replace("-", "_") for name in prefix_holds}
    for test in details.get("tests") or ():
        if not isinstance(test, dict) or test.get("verdict") != "runtime_error":
            continue
        lines = str(test.get("stderr", "")).strip().splitlines()
        match = _MISSING.match(lines[-1]) if lines else None
        if match is None:
            continue
        top = match["name"].split(".")[0]
        if top not in sys.stdlib_module_names and top.lower() not in have:
            return top
    return None


@functools.cache
def runtime_packages() -> frozenset[str]:
    """The import names of what `assay sandbox-runtime` installs (`runtime-packages.txt`): what a code
    task may assume a sandboxed program can import (issue 44)."""
    from assay.sandbox import runtime_build

    names = set()
    for line in runtime_build.packages_file().read_text().splitlines():
        match = _PINNED.match(line.strip())
        if match and not line.lstrip().startswith("#"):
            names.add(match["name"].lower().replace("-", "_"))
    return frozenset(names)


def lacking_runtime_package(module: str | None, prefix_holds: Iterable[str]) -> str | None:
    """`module` when it is one of `runtime_packages()` and the configured prefix does not hold it: the
    server's runtime is incomplete, so the program cannot be scored (an `error`, not a 0). A module
    outside that list (a made-up name, a package no runtime offers) is the program's own failure: a
    policy must not turn a wrong answer into an unscored one by importing something on purpose."""
    if module is None:
        return None
    have = {name.lower().replace("-", "_") for name in prefix_holds}
    top = module.lower()
    return module if top in runtime_packages() and top not in have else None


def missing_package_reason(module: str) -> str:
    """What an operator must do when the runtime lacks `module`."""
    return (
        f"the sandbox runtime lacks {module}, which code tasks may assume: build the runtime with"
        " `assay sandbox-runtime` (or `make sandbox-runtime`) and point ASSAY_CODE__PYTHON_PREFIX at it,"
        f" or add {module} to the prefix ASSAY_CODE__PYTHON_PREFIX names"
    )
