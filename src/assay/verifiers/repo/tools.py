"""The `repo` session tool (issue 27, part 5): an agent reads, edits and runs a repository task's
working copy, in the shape of SWE-agent's `str_replace_editor` plus a shell (one tool, a `command`
field), so that all calls of a session share one working copy.

- `view`: a file's lines (numbered), or a directory's entries;
- `str_replace`: replace `old` by `new` in a file, where `old` occurs exactly once;
- `create`: write a whole file (new or replaced);
- `run`: a shell command in the working copy, in the session's bubblewrap sandbox (no network; the
  package prefix with pytest and the repository's own dependencies read-only; `python3 -m pytest ...`
  runs the tests);
- `diff`: the change so far, as a unified diff against the base.

The working copy is the tree of `base_commit` without the hidden `test_patch` (no call reveals the hidden
tests) and without the repository's history: its `.git` is a fresh repository whose one commit is that
tree, so `git diff`/`git status` work and `git log` leads nowhere (issue 37: `git diff HEAD HEAD~1` in a
full clone hands over the fix). Reading and editing happen on the host, each path opened one component
at a time with `O_NOFOLLOW` (a link planted by a command cannot lead a host read or write out of the
copy; between calls no process of the sandbox is alive, the runtime kills them after each command).
`diff` compares with a pristine copy in Python, never with git on the host (a command could plant a
git hook or config).
To be judged, the session's `verify` gets that diff as its response: the same `repo` verdict as
`/v1/rewards`, on a fresh copy, with the hidden tests.
"""

from __future__ import annotations

import difflib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import Field

from assay.sandbox.base import Limits, RunOutcome, SandboxError
from assay.sessions.tools import (
    OK,
    TOOL_ERROR,
    Observation,
    SessionContext,
    Tool,
    ToolArguments,
    ToolUnavailable,
)
from assay.settings import Settings
from assay.types import Item
from assay.verifiers.repo.dependencies import environments
from assay.verifiers.repo.task import TaskInvalid, parse_task
from assay.verifiers.repo.workcopy import RepoNotFound, resolve_repo

_MAX_FILE = 1 << 20  # bytes a view or a diff reads of one file


class RepoArguments(ToolArguments):
    command: Literal["view", "str_replace", "create", "run", "diff"] = Field(
        description="view a file or directory, str_replace in a file, create a file, run a shell command"
        " in the repository, or diff: the change so far (submit it as the answer)."
    )
    path: str | None = Field(None, description="File or directory, relative to the repository root.")
    old: str | None = Field(None, description="str_replace: the exact text to replace (must occur once).")
    new: str | None = Field(None, description="str_replace: the replacement; create: the file's content.")
    shell: str | None = Field(None, description="run: the command, e.g. `python3 -m pytest -x tests`.")
    start_line: int | None = Field(None, ge=1, description="view: first line shown.")
    end_line: int | None = Field(None, ge=1, description="view: last line shown.")


@dataclass
class Workspace:
    holder: Path
    copy: Path
    base: Path
    slot: Any  # the session's BwrapSlot, started on the first `run`
    uid: int | None = None
    env: str | None = None  # the repository's own dependency directory (`dependencies`), if any


def _walk(root: Path, rel: str) -> tuple[int, str]:
    """(descriptor of the parent directory, last name) of `rel` under `root`, never through a link."""
    pure = PurePosixPath(rel)
    if not rel or pure.is_absolute() or ".." in pure.parts or ".git" in pure.parts:
        raise ValueError(f"path {rel!r} must be relative to the repository, without .. or .git")
    fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in pure.parts[:-1]:
            nxt = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError:
        os.close(fd)
        raise ValueError(f"no directory on the way to {rel!r} (or it goes through a link)") from None
    return fd, pure.name


def read_in(root: Path, rel: str) -> bytes:
    parent, name = _walk(root, rel)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=parent)
    except OSError as exc:
        raise ValueError(f"cannot read {rel!r}: {exc.strerror}") from None
    finally:
        os.close(parent)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ValueError(f"{rel!r} is not a regular file")
        return fh.read(_MAX_FILE + 1)


def write_in(root: Path, rel: str, data: bytes, uid: int | None) -> None:
    parent, name = _walk(root, rel)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644, dir_fd=parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if uid is not None:  # the sandbox's uid keeps owning its copy
                os.fchown(fh.fileno(), uid, uid)
    except OSError as exc:
        raise ValueError(f"cannot write {rel!r}: {exc.strerror}") from None
    finally:
        os.close(parent)


def _files(root: Path) -> dict[str, Path]:
    found = {}
    for top, dirs, names in os.walk(root):  # os.walk does not descend into linked directories
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(top) / name
            if path.is_file() and not path.is_symlink():
                found[str(path.relative_to(root))] = path
    return found


def tree_diff(base: Path, copy: Path) -> str:
    """A git-style unified diff turning `base` into `copy` (regular text files; links are skipped)."""
    old, new = _files(base), _files(copy)
    out = []
    for rel in sorted(set(old) | set(new)):
        a = read_in(base, rel) if rel in old else None
        b = read_in(copy, rel) if rel in new else None
        if a == b or b"\0" in (a or b"") + (b or b""):
            continue
        head = [f"diff --git a/{rel} b/{rel}\n"]
        head += (
            ["new file mode 100644\n"] if a is None else ["deleted file mode 100644\n"] if b is None else []
        )
        lines = difflib.unified_diff(
            (a or b"").decode("utf-8", "replace").splitlines(keepends=True),
            (b or b"").decode("utf-8", "replace").splitlines(keepends=True),
            "/dev/null" if a is None else f"a/{rel}",
            "/dev/null" if b is None else f"b/{rel}",
        )
        text = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
        )
        out.append("".join(head) + text)
    return "".join(out)


def cut_bytes(outcome: RunOutcome) -> int:
    """Bytes of output the run dropped, at least: the runtime keeps nothing past a cap and stops a
    command whose stdout passes it, so the count is a lower bound (1 per stream cut), never 0 after a
    cut (issue 37 measured `truncated=0` after 50 MB were dropped)."""
    return int(outcome.killed == "output") + int(outcome.stderr_truncated)


class RepoTool(Tool[RepoArguments]):
    name = "repo"
    description = (
        "Work on the repository: view a file or directory, str_replace text in a file, create a file, run"
        " a shell command in the repository root (python3 -m pytest runs its tests), or diff to see your"
        " change so far. Your answer is that diff; it is judged by tests you may not see."
    )
    Arguments = RepoArguments

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._envs = environments(settings.repo)

    def check(self, item: Item) -> None:
        root = self.settings.repo.repos
        try:
            if root is None:
                raise RepoNotFound("no repository root is configured (ASSAY_REPOS)")
            resolve_repo(root, parse_task(item).repo)
        except (TaskInvalid, RepoNotFound) as exc:
            raise ToolUnavailable(f"the repo tool needs a repo item: {exc}") from None

    def open(self, session: SessionContext) -> Workspace:
        from assay.verifiers.repo.scorer import environment_for
        from assay.verifiers.repo.workcopy import _run, export_base, fresh_history

        task = parse_task(session.item)
        assert self.settings.repo.repos is not None
        source = resolve_repo(self.settings.repo.repos, task.repo)
        holder = Path(tempfile.mkdtemp(prefix="assay-repo-session-", dir=self.settings.repo.workdir))
        try:
            holder.chmod(0o711)
            base = export_base(source, task.base_commit, holder, "base")
            env = environment_for(self._envs, self.settings, base)
            copy = holder / "w"
            _run(["cp", "--reflink=auto", "-a", "--no-target-directory", str(base), str(copy)])
            fresh_history(copy)
            base.chmod(0o700)
        except BaseException:
            shutil.rmtree(holder, ignore_errors=True)
            raise
        return Workspace(holder, copy, base, slot=None, env=env)

    def call(self, session: SessionContext, state: Workspace, arguments: RepoArguments) -> Observation:
        try:
            if arguments.command == "run":
                return self._run(session, state, arguments.shell or "")
            if arguments.command == "diff":
                diff = tree_diff(state.base, state.copy)
                return Observation(diff or "(no change yet)", OK, details={"diff_bytes": len(diff)})
            if not arguments.path:
                raise ValueError(f"{arguments.command} needs a path")
            if arguments.command == "view":
                return Observation(self._view(state, arguments), OK)
            if arguments.command == "create":
                write_in(state.copy, arguments.path, (arguments.new or "").encode(), state.uid)
                return Observation(f"wrote {arguments.path}", OK)
            return Observation(self._replace(state, arguments), OK)
        except ValueError as exc:
            return Observation(str(exc), TOOL_ERROR, "bad_call")

    @staticmethod
    def _view(state: Workspace, arguments: RepoArguments) -> str:
        assert arguments.path is not None
        target = state.copy / arguments.path
        if arguments.path in (".", "") or (target.is_dir() and not target.is_symlink()):
            parent, _ = _walk(state.copy, f"{arguments.path}/x")  # the directory itself, no link on the way
            try:
                listed = os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=parent)
            finally:
                os.close(parent)
            try:
                return "\n".join(sorted(os.listdir(listed))) or "(empty)"
            finally:
                os.close(listed)
        lines = read_in(state.copy, arguments.path).decode("utf-8", "replace").splitlines()
        first = (arguments.start_line or 1) - 1
        last = arguments.end_line or len(lines)
        return "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines[first:last], first + 1))

    @staticmethod
    def _replace(state: Workspace, arguments: RepoArguments) -> str:
        assert arguments.path is not None
        if not arguments.old:
            raise ValueError("str_replace needs `old`, the text to replace")
        text = read_in(state.copy, arguments.path).decode("utf-8")
        count = text.count(arguments.old)
        if count != 1:
            raise ValueError(f"`old` occurs {count} times in {arguments.path}; it must occur exactly once")
        write_in(
            state.copy, arguments.path, text.replace(arguments.old, arguments.new or "").encode(), state.uid
        )
        return f"replaced 1 occurrence in {arguments.path}"

    def _run(self, session: SessionContext, state: Workspace, shell: str) -> Observation:
        from assay.sandbox import bwrap, runtime, seccomp
        from assay.verifiers.repo.scorer import bwrap_binary, prefix_for

        if not shell.strip():
            raise ValueError("run needs `shell`, the command")
        if state.slot is None or not state.slot.alive:
            config = bwrap.BwrapConfig(
                bwrap=bwrap_binary(self.settings),
                use_seccomp=seccomp.available(),
                python_prefix=prefix_for(self.settings),
                workdir=str(state.copy),
                env_prefix=state.env,
            )
            state.slot = bwrap.BwrapSlot(config, f"repo-{session.session_id}")
            state.uid = state.slot.uid
        limits = session.limits
        paths = [runtime.PREFIX_MOUNT, *(["/repo/src"] if (state.copy / "src").is_dir() else []), "/repo"]
        paths += [runtime.ENV_MOUNT] if state.env is not None else []
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONPATH": ":".join(paths)}
        run_limits = Limits(
            time_s=float(limits.cpu_s or 60),
            wall_s=float(limits.call_wall_s or 60),
            memory_mb=int(limits.memory_mb or 1024),
            stdout_bytes=int(limits.output_bytes or 65536),
            address_space=False,
        )
        request = {"argv": ["/bin/sh", "-c", shell], "env": env, "cwd": bwrap.WORKDIR_MOUNT}
        try:
            outcome = state.slot.run(request, b"", run_limits)
        except SandboxError:
            state.slot.close()
            raise
        text = outcome.stdout.decode("utf-8", "replace") + outcome.stderr.decode("utf-8", "replace")
        text += f"\n(exit code {outcome.exit_code}" + (
            f", stopped at the {outcome.killed} limit)" if outcome.killed else ")"
        )
        cut = cut_bytes(outcome)
        if cut:
            text += f"\n[output cut at its cap of {run_limits.stdout_bytes} bytes]"
        return Observation(text, OK, truncated=cut, details={"exit_code": outcome.exit_code})

    def alive(self, state: Workspace) -> str | None:
        if state.slot is not None and not state.slot.alive:
            return "the repository sandbox ended"
        return None

    def close(self, state: Workspace) -> None:
        if state.slot is not None:
            state.slot.close()
        shutil.rmtree(state.holder, ignore_errors=True)
