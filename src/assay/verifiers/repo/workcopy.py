"""A private working copy per item, and the hygiene scan of what a change touches.

The repository under the configured root is never written. Each item gets the base tree only (issue 37):
for a git repository, the files of `base_commit` (else HEAD) written by `git checkout-index` from a
private index into a fresh directory, with no `.git`: nothing from which a later commit (the fix) can be
read, as `git diff HEAD HEAD~1` would in a full clone. A plain directory is copied with
`cp --reflink=auto -a`, less any `.git`. Either way every compiled Python file is removed (`.pyc`, `.pyo`,
`__pycache__/`): stale bytecode never stands in for a source file. git runs on the host over the
server's own repository, before anything untrusted exists. Only the copy is bound into the sandbox; it is
removed when the item is done.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from assay.errors import ItemError

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")
_COMMIT = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_.\-/]{0,199}$")
_TEST_CONFIG = {"conftest.py", "noxfile.py"}  # configuration files: pytest says (pytest_config)
_TEST_DIRS = {"test", "tests"}
_BYTECODE = (".pyc", ".pyo")
_GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "LC_ALL": "C",
}


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


def _run(
    argv: list[str], cwd: Path | None = None, timeout: float = 120.0, env: dict[str, str] | None = None
) -> None:
    done = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False, env=env
    )
    if done.returncode != 0:
        raise OSError(f"{argv[0]} {argv[1]} failed: {done.stderr.strip()[-500:]}")


def _export(source: Path, commit: str | None, copy: Path, index: Path) -> None:
    """The tree of `commit` (HEAD when None) of the git repository `source`, written to `copy` without
    `.git`: a private index file, so the repository's own index and work tree are never touched."""
    if commit is not None and not _COMMIT.match(commit):
        raise RepoNotFound(f"base_commit {commit!r} is not a commit name")
    env = {**_GIT_ENV, "GIT_INDEX_FILE": str(index)}
    git = ["git", "-C", str(source)]
    rev = f"{commit or 'HEAD'}^{{commit}}"
    probe = subprocess.run(
        [*git, "rev-parse", "--verify", "-q", rev], capture_output=True, env=env, timeout=60, check=False
    )
    if probe.returncode != 0:
        raise RepoNotFound(f"base_commit {commit!r} is not in the repository")
    copy.mkdir()
    _run([*git, "read-tree", probe.stdout.decode().strip()], env=env)
    _run([*git, "checkout-index", "-a", "-f", f"--prefix={copy}/"], env=env)


def drop_bytecode(copy: Path) -> list[str]:
    """Remove every compiled Python file under `copy` (`__pycache__/`, `*.pyc`, `*.pyo`); their paths."""
    dropped = []
    for top, dirs, names in os.walk(copy):
        here = Path(top)
        for name in [d for d in dirs if d == "__pycache__"]:
            dirs.remove(name)
            shutil.rmtree(here / name, ignore_errors=True)
            dropped.append(str((here / name).relative_to(copy)))
        for name in names:
            if name.endswith(_BYTECODE):
                (here / name).unlink(missing_ok=True)
                dropped.append(str((here / name).relative_to(copy)))
    return dropped


def export_base(source: Path, base_commit: str | None, holder: Path, name: str = "w") -> Path:
    """`holder/name`: the base tree of `source` with no history and no bytecode (see the module doc)."""
    copy = holder / name
    if (source / ".git").exists():
        _export(source, base_commit, copy, holder / f".{name}.index")
        (holder / f".{name}.index").unlink(missing_ok=True)
    elif base_commit:
        raise RepoNotFound("base_commit given, but the repository is not a git repository")
    else:
        _run(["cp", "--reflink=auto", "-a", "--no-target-directory", str(source), str(copy)])
        shutil.rmtree(copy / ".git", ignore_errors=True)
    drop_bytecode(copy)
    return copy


def fresh_history(copy: Path) -> None:
    """Make `copy` a git repository of one commit, its present tree (for a session's `git diff`): no
    object of the source repository is in it. Run before anything untrusted touched the copy."""
    git = ["git", "-C", str(copy), "-c", "user.name=assay", "-c", "user.email=assay@localhost"]
    env = {**_GIT_ENV, "GIT_CEILING_DIRECTORIES": str(copy.parent)}
    _run([*git, "init", "-q"], env=env)
    _run([*git, "add", "-A", "-f"], env=env)
    _run([*git, "commit", "-q", "--no-verify", "--allow-empty", "-m", "base"], env=env)


@contextlib.contextmanager
def working_copy(source: Path, base_commit: str | None, parent: Path | None = None) -> Iterator[Path]:
    """A private base tree of `source` (at `base_commit`), removed afterwards. OSError: our side failed."""
    holder = Path(tempfile.mkdtemp(prefix="assay-repo-", dir=parent))
    try:
        holder.chmod(0o711)  # the sandbox uid may pass through to the copy (not list its neighbours)
        yield export_base(source, base_commit, holder)
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


def hygiene_flags(paths: Iterable[str], hidden: set[str], config: Iterable[str] = ()) -> list[str]:
    """What a change does to tests: `edits_tests:<path>`, `edits_test_config:<path>` (a conftest, or a
    file whose pytest configuration changed: `config`, pytest's own answer), `edits_hidden_tests:<path>`
    (a path the hidden test patch or a named test lives in)."""
    flags = []
    for path in paths:
        if path in hidden:
            flags.append(f"edits_hidden_tests:{path}")
        elif PurePosixPath(path).name in _TEST_CONFIG:
            flags.append(f"edits_test_config:{path}")
        elif is_test_path(path):
            flags.append(f"edits_tests:{path}")
    return list(dict.fromkeys([*flags, *config]))
