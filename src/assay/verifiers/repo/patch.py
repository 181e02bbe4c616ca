"""The change as a unified diff: found in the response, checked, applied to a working copy with `git apply`.

Applied on the host, outside the sandbox: `git apply` is trusted code that only reads the diff and writes
files, it never runs anything of the repository, and doing it here means a diff that does not apply is
told apart from a test run before any sandbox starts. Because it runs with the server's rights, every
path the diff touches is checked first, from `git apply --numstat` (the paths git itself will write, so
no second parser can disagree with it): relative, no `..`, never inside `.git`, no symbolic link on the
way or at the end (a link could lead the write out of the working copy), and a diff may not create links
or change a file into one. `GIT_CEILING_DIRECTORIES` keeps git from finding a repository above the copy.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_FENCE = re.compile(r"```[ \t]*(?:diff|patch|udiff)?[ \t]*\n(.*?)```", re.DOTALL)
_DIFF_START = re.compile(r"^(diff --git |--- )", re.MULTILINE)
_LINK_MODE = re.compile(r"^ (?:create mode|mode change \d+ =>) 120000 ", re.MULTILINE)
_GIT_TIMEOUT_S = 60.0
_COMPILED = {".pyc", ".pyo", ".so", ".pyd", ".dylib", ".dll"}


class PatchRejected(Exception):
    """The diff cannot be applied (malformed, does not match, or writes where it may not): the model's
    fault when it is the response (reward 0), the item's when it is the hidden test patch."""


def extract_diff(response: str) -> str:
    """The unified diff in a response: the last ```diff fence holding one, else the text from its first
    `diff --git` or `--- ` line; "" when the response has none (an empty change)."""
    fenced = [block for block in _FENCE.findall(response) if _DIFF_START.search(block)]
    text = fenced[-1] if fenced else response
    start = _DIFF_START.search(text)
    if start is None:
        return ""
    diff = text[start.start() :]
    return diff if diff.endswith("\n") else diff + "\n"


@dataclass(frozen=True)
class DiffInfo:
    """What a diff would write: the paths (old and new names of renames), and whether it adds links."""

    paths: tuple[str, ...]
    added_lines: dict[str, list[str]]  # path -> lines the diff adds there
    binary: tuple[str, ...] = ()  # paths git writes from a binary patch (numstat `-`)

    def compiled(self) -> list[str]:
        """`binary_patch:<path>` and `compiled_file:<path>` for what this diff writes that is not source:
        Python loads a `.pyc` (with an unchecked hash) or an extension module in place of the `.py`
        beside it, so such a change can fix nothing in the source and still pass (issue 37)."""
        flags = [f"compiled_file:{p}" for p in self.paths if is_compiled(p)]
        return flags + [f"binary_patch:{p}" for p in self.binary if not is_compiled(p)]


def is_compiled(path: str) -> bool:
    """A compiled file by its name: bytecode, anything in `__pycache__`, an extension module or library."""
    pure = PurePosixPath(path)
    return "__pycache__" in pure.parts or pure.suffix in _COMPILED or ".so." in pure.name


def _git(args: list[str], cwd: Path, diff: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CEILING_DIRECTORIES": str(cwd.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(cwd.parent),
        "LC_ALL": "C",
    }
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=diff,
            capture_output=True,
            text=True,
            env=env,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError as exc:
        raise OSError("git is not installed on this server (apt-get install -y git)") from exc


def _numstat_paths(out: str) -> tuple[list[str], list[str]]:
    """Paths of `git apply --numstat -z`: `a\\tb\\tpath\\0`, or `a\\tb\\t\\0old\\0new\\0` for a rename;
    and those of them git patches as binary (`-\\t-\\t`)."""
    fields = out.split("\0")
    paths: list[str] = []
    binary: list[str] = []
    index = 0
    while index < len(fields):
        entry = fields[index]
        index += 1
        if not entry:
            continue
        path = entry.split("\t", 2)[2] if entry.count("\t") >= 2 else entry
        names = [path] if path else fields[index : index + 2]  # a rename or copy: the two names follow
        index += 0 if path else 2
        paths.extend(names)
        if entry.startswith("-\t-\t"):
            binary.extend(names)
    return paths, binary


def _added_lines(diff: str) -> dict[str, list[str]]:
    """Lines each file gains (for the hygiene scan); keyed by the `+++ b/...` name."""
    added: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].split("\t")[0].strip().strip('"')
            name = name[2:] if name.startswith("b/") else name
            current = added.setdefault(name, [])
        elif line.startswith("+") and current is not None:
            current.append(line[1:])
    return added


def check_path(root: Path, path: str) -> str | None:
    """Why `path` may not be written inside `root`, or None when it may."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute():
        return f"absolute or empty path {path!r}"
    if ".." in pure.parts:
        return f"path {path!r} leaves the working copy"
    if ".git" in pure.parts:
        return f"path {path!r} is inside .git"
    current = root
    for part in pure.parts:
        current = current / part
        if current.is_symlink():
            return f"path {path!r} goes through the symbolic link {part!r}"
    return None


def inspect_diff(root: Path, diff: str) -> DiffInfo:
    """The paths a diff writes, checked against `root`; PatchRejected says why it cannot be applied."""
    listed = _git(["apply", "--numstat", "--summary", "-z", "-"], root, diff)
    if listed.returncode != 0:
        raise PatchRejected(f"not a valid diff: {listed.stderr.strip()[-500:]}")
    if _LINK_MODE.search(_git(["apply", "--summary", "-"], root, diff).stdout):
        raise PatchRejected("the diff creates a symbolic link, which a change may not do")
    summary_start = listed.stdout.find("\0 ")  # --summary lines follow the numstat records
    numstat = listed.stdout if summary_start < 0 else listed.stdout[: summary_start + 1]
    paths, binary = _numstat_paths(numstat)
    for path in paths:
        problem = check_path(root, path)
        if problem:
            raise PatchRejected(problem)
    return DiffInfo(
        paths=tuple(dict.fromkeys(paths)),
        added_lines=_added_lines(diff),
        binary=tuple(dict.fromkeys(binary)),
    )


def check_applies(root: Path, diff: str) -> None:
    """PatchRejected unless `diff` would apply to `root` as it is now (nothing is written)."""
    done = _git(["apply", "--check", "--whitespace=nowarn", "-"], root, diff)
    if done.returncode != 0:
        raise PatchRejected(f"the diff does not apply: {done.stderr.strip()[-1000:]}")


def apply_diff(root: Path, diff: str) -> DiffInfo:
    """Check and apply `diff` to the working copy at `root`; PatchRejected when it does not apply."""
    info = inspect_diff(root, diff)
    done = _git(["apply", "--whitespace=nowarn", "-"], root, diff)
    if done.returncode != 0:
        raise PatchRejected(f"the diff does not apply: {done.stderr.strip()[-1000:]}")
    return info
