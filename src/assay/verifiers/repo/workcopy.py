"""A private working copy per item, and the hygiene scan of what a change touches.

The repository under the configured root is never written: each item gets `cp --reflink=auto -a` of it
in a temporary directory (copy-on-write where the file system can, a plain copy elsewhere), checked out
at `base_commit` when one is given (git runs on the host in the fresh copy, before anything untrusted
touched it). Only that copy is bound into the sandbox. It is removed when the item is done.
"""

from __future__ import annotations

import configparser
import contextlib
import re
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from assay.errors import ItemError

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")
_COMMIT = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_.\-/]{0,199}$")
_TEST_CONFIG = {"conftest.py", "pytest.ini", "tox.ini", ".pytest.ini", "noxfile.py"}
_TEST_DIRS = {"test", "tests"}


class RepoNotFound(ItemError):
    """The item names no repository the server has (the item's fault: `invalid`)."""


def resolve_repo(root: Path, name: str) -> Path:
    """The directory `name` under `root`; a name that is absolute, has `..` or leaves it is refused."""
    if not _NAME.match(name) or ".." in name.split("/"):
        raise RepoNotFound(f"repo {name!r} is not a plain relative name (letters, digits, _ . - and /)")
    path = root / name
    if path.is_symlink() or not path.is_dir():
        raise RepoNotFound(f"no repository {name!r} under the repository root")
    if not path.resolve().is_relative_to(root.resolve()):
        raise RepoNotFound(f"repo {name!r} leaves the repository root")
    return path


def _run(argv: list[str], cwd: Path | None = None, timeout: float = 120.0) -> None:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise OSError(f"{argv[0]} {argv[1]} failed: {done.stderr.strip()[-500:]}")


def _checkout(copy: Path, commit: str) -> None:
    if not _COMMIT.match(commit):
        raise RepoNotFound(f"base_commit {commit!r} is not a commit name")
    if not (copy / ".git").is_dir():
        raise RepoNotFound("base_commit given, but the repository is not a git repository")
    git = ["git", "-c", "advice.detachedHead=false", "-C", str(copy)]
    probe = subprocess.run([*git, "rev-parse", "--verify", "-q", f"{commit}^{{commit}}"], capture_output=True)
    if probe.returncode != 0:
        raise RepoNotFound(f"base_commit {commit!r} is not in the repository")
    _run([*git, "checkout", "-q", "--force", commit])
    _run([*git, "clean", "-q", "-f", "-d", "-x"])


@contextlib.contextmanager
def working_copy(source: Path, base_commit: str | None, parent: Path | None = None) -> Iterator[Path]:
    """A private copy of `source` (at `base_commit`), removed afterwards. OSError: our side failed."""
    holder = Path(tempfile.mkdtemp(prefix="assay-repo-", dir=parent))
    try:
        holder.chmod(0o711)  # the sandbox uid may pass through to the copy (not list its neighbours)
        copy = holder / "w"
        _run(["cp", "--reflink=auto", "-a", "--no-target-directory", str(source), str(copy)])
        if base_commit:
            _checkout(copy, base_commit)
        yield copy
    finally:
        shutil.rmtree(holder, ignore_errors=True)


# -- hygiene -----------------------------------------------------------------------------------------
def is_test_path(path: str) -> bool:
    """A test file by the usual conventions: test_*.py, *_test.py, or anything under tests/ or test/."""
    pure = PurePosixPath(path)
    name = pure.name
    if name in _TEST_CONFIG:
        return True
    if name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")):
        return True
    return any(part in _TEST_DIRS for part in pure.parts[:-1])


def _pytest_section(path: Path) -> Any:
    """The pytest configuration a setup.cfg or pyproject.toml holds (None when it has none)."""
    if not path.is_file():
        return None
    try:
        if path.name == "setup.cfg":
            parser = configparser.RawConfigParser()
            parser.read_string(path.read_text(errors="replace"))
            return {s: dict(parser[s]) for s in ("tool:pytest", "pytest") if parser.has_section(s)} or None
        tool = tomllib.loads(path.read_text(errors="replace")).get("tool", {})
        return tool.get("pytest")
    except (configparser.Error, tomllib.TOMLDecodeError, UnicodeError):
        return "unreadable"


def config_sections(root: Path, paths: Iterable[str]) -> dict[str, Any]:
    """The pytest sections of the setup.cfg / pyproject.toml files among `paths`, as they are now."""
    return {
        p: _pytest_section(root / p)
        for p in paths
        if PurePosixPath(p).name in ("setup.cfg", "pyproject.toml")
    }


def hygiene_flags(
    paths: Iterable[str], hidden: set[str], before: dict[str, Any], after: dict[str, Any]
) -> list[str]:
    """What a change does to tests: `edits_tests:<path>`, `edits_test_config:<path>`,
    `edits_hidden_tests:<path>` (a path the hidden test patch or a named test lives in)."""
    flags = []
    for path in paths:
        if path in hidden:
            flags.append(f"edits_hidden_tests:{path}")
        elif PurePosixPath(path).name in _TEST_CONFIG:
            flags.append(f"edits_test_config:{path}")
        elif is_test_path(path):
            flags.append(f"edits_tests:{path}")
    flags += [f"edits_test_config:{p}" for p in after if before.get(p) != after[p]]
    return flags
