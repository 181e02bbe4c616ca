"""A repository's own dependency environment: read from its metadata, built once, kept by content hash.

What is read (the base tree, before the change: a change cannot choose what gets installed), statically,
never running any of the repository's code: `pyproject.toml` (`[project] dependencies`, the test extras
of `[project.optional-dependencies]`, the test groups of `[dependency-groups]`), `setup.cfg`
(`install_requires`, `tests_require`, test extras), `setup.py` (the same keywords, where they are
literals or names bound to literals; a computed list is not read), and the requirement files of
`REQUIREMENT_FILES` (`-r` followed inside the repository). Test extras are those named in `TEST_EXTRAS`;
a reference to the project itself (`name[yaml]`) brings in those extras, never the project: the code
under test is always the working copy's. Lines that point outside the package index (URLs, local paths,
`-e`) or are pip options are left out.

How it is built: `pip install --target DIR --only-binary=:all: --python-version X.Y` by the server's pip
for the sandbox's interpreter, the way `assay sandbox-runtime` builds the runtime. A `--target`
directory, not a venv: the sandbox runs `/usr/bin/python3 -S` with package directories on its path
(a venv's interpreter and `site` would bring back what `-S` keeps out), and a plain directory is
mounted read-only like the runtime. Binary wheels only: nothing of a dependency (a `setup.py`) runs on
the host while building.

Used: mounted read-only at `/opt/assay/env` and put on `sys.path` after the working copy and the package
prefix (`run.repo_paths`: the code under test is the copy's, pytest the prefix's). `.pth` files are not
read there (the sandbox's Python runs without `site`).

Where: `repo.env_cache` (default `assay/repo-envs` in the cache that holds the sandbox runtime), one
directory per key, the SHA-256 of the requirement lines read and the interpreter's version (so editing
unrelated metadata rebuilds nothing). A build goes to `KEY.partial` and is renamed when pip succeeded,
under an exclusive `flock` of `KEY.lock`: items of the same repository, in threads or in other server
processes, build it once; the others wait and then use it. A failed build is remembered for the
process (one pip run per key), and reported as `EnvironmentFailed` with pip's last lines: the scorer's
`error`, never a reward.
"""

from __future__ import annotations

import configparser
import contextlib
import fcntl
import hashlib
import json
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.sandbox.base import SandboxError

if TYPE_CHECKING:
    from assay.settings import RepoSettings

TEST_EXTRAS = ("test", "tests", "testing")
REQUIREMENT_FILES = (
    "requirements.txt",
    "requirements-test.txt",
    "requirements-tests.txt",
    "requirements_test.txt",
    "test-requirements.txt",
    "test_requirements.txt",
    "requirements/test.txt",
    "requirements/tests.txt",
)
MARKER = ".built"
_NAME = re.compile(r"^\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[(?P<extras>[^\]]*)\])?")
_URL = re.compile(r"^[a-z+]+://|\s@\s", re.IGNORECASE)
_MAX_INCLUDES = 16  # -r files and self-referencing extras followed, at most


class EnvironmentFailed(SandboxError):
    """The repository's environment could not be read or built (the scorer's `error`, with the reason)."""


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Requirements:
    """What a repository asks to have installed: requirement lines (sorted, unique) and where they came
    from. Empty: the repository needs nothing beyond the sandbox runtime."""

    lines: tuple[str, ...]
    sources: tuple[str, ...]

    def without(self, provided: frozenset[str]) -> Requirements:
        """These requirements less those on a distribution in `provided` (normalised names: what the
        package prefix holds, `installed`). The prefix comes first on the sandbox's path, so a copy in the
        environment would never be imported; and a repository whose needs the prefix meets builds nothing
        (no index needed: an offline server keeps scoring it)."""
        kept = []
        for line in self.lines:
            name = _NAME.match(line)
            if name is None or normalise(name.group("name")) not in provided:
                kept.append(line)
        return Requirements(tuple(kept), self.sources)

    def key(self, python: str) -> str:
        """The cache key: a SHA-256 of the lines and the interpreter's version."""
        text = json.dumps({"python": python, "lines": list(self.lines), "format": 1})
        return hashlib.sha256(text.encode()).hexdigest()[:32]


class _Reader:
    """Gathers requirement lines from one tree; `extras` collects the extras a self-reference asks for."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.own: str | None = None
        self.lines: list[str] = []
        self.sources: list[str] = []
        self.extras: dict[str, list[str]] = {}
        self._follows = 0

    def add(self, source: str, lines: Iterable[Any]) -> None:
        found = [line.strip() for line in lines if isinstance(line, str) and line.strip()]
        if found:
            self.lines += found
            self.sources.append(source)

    def text(self, rel: str) -> str | None:
        path = self.root / rel
        if path.is_symlink() or not path.is_file():
            return None
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def result(self) -> Requirements:
        """The lines, with references to the project itself replaced by the extras they name."""
        wanted: list[str] = []
        pending = list(self.lines)
        seen_extras: set[str] = set()
        while pending:
            line = pending.pop(0)
            match = _NAME.match(line)
            if match is None or _URL.search(line):
                continue
            if self.own is not None and normalise(match["name"]) == self.own:
                for extra in (match["extras"] or "").split(","):
                    extra = normalise(extra.strip())
                    if extra and extra not in seen_extras and len(seen_extras) < _MAX_INCLUDES:
                        seen_extras.add(extra)
                        pending += self.extras.get(extra, [])
                continue
            wanted.append(re.sub(r"\s+", " ", line))
        return Requirements(tuple(sorted(set(wanted))), tuple(dict.fromkeys(self.sources)))


def read_requirements(root: Path) -> Requirements:
    """The requirements the tree at `root` declares (see the module doc); EnvironmentFailed when a
    metadata file is there but cannot be parsed."""
    reader = _Reader(root)
    _read_pyproject(reader)
    _read_setup_cfg(reader)
    _read_setup_py(reader)
    for rel in REQUIREMENT_FILES:
        _read_requirement_file(reader, rel)
    return reader.result()


def _extras(reader: _Reader, table: Any, source: str) -> None:
    if not isinstance(table, dict):
        return
    for extra, lines in table.items():
        if not isinstance(lines, list):
            continue
        reader.extras.setdefault(normalise(str(extra)), []).extend(x for x in lines if isinstance(x, str))
        if normalise(str(extra)) in TEST_EXTRAS:
            reader.add(f"{source} [{extra}]", lines)


def _read_pyproject(reader: _Reader) -> None:
    text = reader.text("pyproject.toml")
    if text is None:
        return
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EnvironmentFailed(f"pyproject.toml cannot be parsed: {exc}") from None
    found = data.get("project")
    project: dict[str, Any] = found if isinstance(found, dict) else {}
    if isinstance(project.get("name"), str):
        reader.own = normalise(project["name"])
    if isinstance(project.get("dependencies"), list):
        reader.add("pyproject.toml", project["dependencies"])
    _extras(reader, project.get("optional-dependencies"), "pyproject.toml")
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):
        for name in groups:
            if normalise(str(name)) in TEST_EXTRAS:
                reader.add(f"pyproject.toml dependency-groups.{name}", _group(groups, name, 0))


def _group(groups: dict[str, Any], name: str, depth: int) -> list[str]:
    """A PEP 735 dependency group with its `{include-group = ...}` entries expanded."""
    lines: list[str] = []
    for entry in groups.get(name) or []:
        if isinstance(entry, str):
            lines.append(entry)
        elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str) and depth < 8:
            lines += _group(groups, entry["include-group"], depth + 1)
    return lines


def _read_setup_cfg(reader: _Reader) -> None:
    text = reader.text("setup.cfg")
    if text is None:
        return
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise EnvironmentFailed(f"setup.cfg cannot be parsed: {exc}") from None
    if reader.own is None and parser.has_option("metadata", "name"):
        reader.own = normalise(parser.get("metadata", "name"))
    for option in ("install_requires", "tests_require"):
        if parser.has_option("options", option):
            reader.add(f"setup.cfg {option}", parser.get("options", option).splitlines())
    if parser.has_section("options.extras_require"):
        table = {k: v.splitlines() for k, v in parser.items("options.extras_require")}
        _extras(reader, table, "setup.cfg")


def _read_setup_py(reader: _Reader) -> None:
    """`setup(...)`'s requirement keywords where they are literals, or names bound to literals at the
    module's top level; read with `ast`, never run."""
    import ast

    text = reader.text("setup.py")
    if text is None:
        return
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise EnvironmentFailed(f"setup.py cannot be parsed: {exc}") from None
    bound: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound[node.targets[0].id] = node.value

    def literal(node: ast.expr) -> Any:
        if isinstance(node, ast.Name) and node.id in bound:
            node = bound[node.id]
        with contextlib.suppress(ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return ast.literal_eval(node)
        return None

    for call in ast.walk(tree):
        func = getattr(call, "func", None)
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if not isinstance(call, ast.Call) or name != "setup":
            continue
        for keyword in call.keywords:
            value = literal(keyword.value)
            if keyword.arg == "name" and isinstance(value, str) and reader.own is None:
                reader.own = normalise(value)
            elif keyword.arg in ("install_requires", "tests_require") and isinstance(value, list | tuple):
                reader.add(f"setup.py {keyword.arg}", value)
            elif keyword.arg == "extras_require":
                _extras(reader, value, "setup.py")


def _read_requirement_file(reader: _Reader, rel: str) -> None:
    text = reader.text(rel)
    if text is None:
        return
    lines = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line.startswith(("-r ", "--requirement ", "-r")) and reader._follows < _MAX_INCLUDES:
            target = line.split(None, 1)[1] if " " in line else line[2:]
            reader._follows += 1
            included = (Path(rel).parent / target.strip()).as_posix()
            if ".." not in Path(included).parts and not Path(included).is_absolute():
                _read_requirement_file(reader, included)
        elif line and not line.startswith(("-", "#", ".", "/")):
            lines.append(line)
    reader.add(rel, lines)


def installed(prefix: str | Path) -> frozenset[str]:
    """The distributions a package prefix holds: the normalised names of its `*.dist-info` directories
    (`name-version.dist-info`)."""
    return frozenset(
        normalise(info.name.removesuffix(".dist-info").rsplit("-", 1)[0])
        for info in Path(prefix).glob("*.dist-info")
    )


# -- building ----------------------------------------------------------------------------------------
def build_command(target: Path, python: str, requirements: Path) -> list[str]:
    """pip for the sandbox's interpreter (binary wheels only, see the module doc)."""
    return [
        sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-warn-script-location",
        "--no-input", "--only-binary=:all:", "--python-version", python, "--target", str(target),
        "-r", str(requirements),
    ]  # fmt: skip


class Environments:
    """The environments under one cache directory, for one interpreter version (thread-safe)."""

    def __init__(self, cache: Path, python: str | None = None, timeout_s: float = 600.0) -> None:
        self.cache = cache
        self._python = python  # None: the sandbox interpreter's version, asked when first needed
        self.timeout_s = timeout_s
        self._failed: dict[str, str] = {}
        self._lock = threading.Lock()

    def for_tree(self, root: Path, provided: frozenset[str] = frozenset()) -> Path | None:
        """The environment the base tree at `root` declares (`read_requirements`), less what the package
        prefix already holds (`provided`), built if needed."""
        return self.ensure(read_requirements(root).without(provided))

    def ensure(self, requirements: Requirements) -> Path | None:
        """The built environment for `requirements` (None when there is nothing to install), building it
        first if needed; EnvironmentFailed with pip's reason when it cannot be built."""
        if not requirements.lines:
            return None
        from assay.sandbox.runtime import closed_to_others

        if (closed := closed_to_others(self.cache.resolve())) is not None:
            raise EnvironmentFailed(
                f"repo.env_cache {str(self.cache)!r} is inside {closed}, which the sandbox's unprivileged"
                " user cannot enter (it needs o+x): choose another repo.env_cache"
            )
        key = requirements.key(self.python())
        target = self.cache / key
        if (target / MARKER).is_file():
            return target
        with self._lock:
            failed = self._failed.get(key)
        if failed is not None:
            raise EnvironmentFailed(failed)
        with self._exclusive(key):
            if not (target / MARKER).is_file():  # another thread or process may have built it meanwhile
                try:
                    self._build(requirements, target)
                except EnvironmentFailed as exc:
                    with self._lock:
                        self._failed[key] = str(exc)
                    raise
        return target

    def python(self) -> str:
        from assay.sandbox import runtime_build

        return self._python or runtime_build.sandbox_python_version()

    @contextlib.contextmanager
    def _exclusive(self, key: str) -> Iterator[None]:
        self.cache.mkdir(parents=True, exist_ok=True)
        self.cache.chmod(0o755)  # the sandbox's uid mounts what is inside (it needs o+x on the way)
        with open(self.cache / f"{key}.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _build(self, requirements: Requirements, target: Path) -> None:
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        listing = partial / "requirements.txt"
        listing.write_text("".join(line + "\n" for line in requirements.lines))
        from_ = ", ".join(requirements.sources)
        try:
            done = subprocess.run(
                build_command(partial, self.python(), listing),
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
                env=_pip_env(),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(partial, ignore_errors=True)
            reason = f"the repository's environment (from {from_}) could not be built: {exc}"
            raise EnvironmentFailed(reason) from None
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            tail = (done.stderr.strip() or done.stdout.strip())[-1500:]
            raise EnvironmentFailed(
                f"pip could not build the repository's environment (from {from_}; exit {done.returncode}):"
                f" {tail}"
            )
        (partial / MARKER).write_text(json.dumps({"lines": list(requirements.lines), "from": from_}))
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)


def _pip_env() -> dict[str, str]:
    """pip's environment: the server's, less anything that would make pip install elsewhere."""
    import os

    drop = ("PIP_TARGET", "PIP_PREFIX", "PIP_USER", "PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")
    return {k: v for k, v in os.environ.items() if k not in drop}


def environments(settings: RepoSettings) -> Environments | None:
    """The environments `settings` configure (None: `repo.envs` is off, the package prefix only)."""
    if not settings.envs:
        return None
    return Environments(settings.env_cache or default_cache(), timeout_s=settings.env_build_s)


def default_cache() -> Path:
    """`assay/repo-envs` beside the sandbox runtime's cache (for root `/var/cache/assay/repo-envs`: the
    sandbox's uid must be able to enter it, which root's home does not allow)."""
    from assay.sandbox import runtime_build

    return runtime_build.cache_root() / "repo-envs"
