"""A repository task as the item states it: which repository, which tests, which hidden test patch.

Reads the wire names of issue 27 (`repo`, `FAIL_TO_PASS`, `PASS_TO_PASS`, `base_commit`, `test_patch`,
`test_cmd`) and SWE-bench's instance fields, where the two test lists are often JSON text, not lists.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from pydantic import Field

from assay.errors import ItemError
from assay.types import Item, TaskFields

# How a test command may start: the rest are pytest's own arguments.
_PYTEST_PREFIXES = (("pytest",), ("python", "-m", "pytest"), ("python3", "-m", "pytest"), ("py.test",))


class RepoFields(TaskFields):
    """The repo task's own item fields (issue 27; the upper-case names and instance_id/patch are
    SWE-bench's instance fields)."""

    repo: str | None = Field(default=None, description="repo: a repository under ASSAY_REPOS.")
    base_commit: str | None = Field(default=None, description="repo: commit to check out first.")
    test_patch: str | None = Field(default=None, description="repo: hidden tests, applied after the change.")
    test_cmd: str | None = Field(default=None, description="repo: the pytest command (default: pytest).")
    FAIL_TO_PASS: list[str] | str | None = Field(
        default=None, description="repo: pytest node ids that must pass (a list, or one as JSON text)."
    )
    PASS_TO_PASS: list[str] | str | None = Field(
        default=None, description="repo: pytest node ids that must keep passing (list or JSON text)."
    )
    instance_id: str | None = Field(default=None, description="repo: SWE-bench's instance id.")
    patch: str | None = Field(default=None, description="repo: the gold change (SWE-bench; preflight).")


class TaskInvalid(ItemError):
    """The item cannot be a repository task (status `invalid`)."""


@dataclass(frozen=True)
class RepoTask:
    repo: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    base_commit: str | None = None
    test_patch: str = ""
    pytest_args: tuple[str, ...] = ()
    gold_patch: str | None = None
    instance_id: str | None = None

    @property
    def tests(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.fail_to_pass, *self.pass_to_pass)))

    @property
    def test_files(self) -> tuple[str, ...]:
        """The files the named tests live in, in order (what pytest is asked to collect)."""
        return tuple(dict.fromkeys(node.split("::", 1)[0] for node in self.tests))


def node_ids(value: list[str] | str | None, name: str) -> tuple[str, ...]:
    """A list of pytest node ids, given as a list or as JSON text of one (SWE-bench's files)."""
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise TaskInvalid(f"{name} is neither a list nor JSON text of one: {exc}") from None
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise TaskInvalid(f"{name} must be a list of pytest node ids (non-empty strings)")
    for node in value:
        path = PurePosixPath(node.split("::", 1)[0])
        if path.is_absolute() or ".." in path.parts or not str(path):
            raise TaskInvalid(f"{name}: {node!r} is not a node id relative to the repository")
    return tuple(value)


def pytest_args(test_cmd: str | None) -> tuple[str, ...]:
    """pytest's own arguments from a test command such as `pytest -rA -x`; other commands are refused,
    because per-test outcomes come from pytest's reporter hooks."""
    if not test_cmd or not test_cmd.strip():
        return ()
    try:
        words = shlex.split(test_cmd)
    except ValueError as exc:
        raise TaskInvalid(f"test_cmd cannot be split into words: {exc}") from None
    for prefix in _PYTEST_PREFIXES:
        if tuple(words[: len(prefix)]) == prefix:
            return tuple(words[len(prefix) :])
    raise TaskInvalid(f"test_cmd must run pytest (pytest ..., python -m pytest ...), got {test_cmd!r}")


def parse_task(item: Item) -> RepoTask:
    """The task an item describes; TaskInvalid says what is missing or malformed."""
    fields = RepoFields.of(item)
    if not fields.repo:
        raise TaskInvalid("a repo item needs `repo`, the name of a repository under ASSAY_REPOS")
    fail_to_pass = node_ids(fields.FAIL_TO_PASS, "FAIL_TO_PASS")
    pass_to_pass = node_ids(fields.PASS_TO_PASS, "PASS_TO_PASS")
    if not fail_to_pass and not pass_to_pass:
        raise TaskInvalid("a repo item needs FAIL_TO_PASS and/or PASS_TO_PASS tests")
    return RepoTask(
        repo=fields.repo,
        fail_to_pass=fail_to_pass,
        pass_to_pass=pass_to_pass,
        base_commit=fields.base_commit or None,
        test_patch=fields.test_patch or "",
        pytest_args=pytest_args(fields.test_cmd),
        gold_patch=fields.patch,
        instance_id=fields.instance_id,
    )
