"""A repository task as the item states it: which repository, which tests, which hidden test patch.

Reads the wire names of issue 27 (`repo`, `FAIL_TO_PASS`, `PASS_TO_PASS`, `base_commit`, `test_patch`,
`test_cmd`) and SWE-bench's instance fields, where the two test lists are often JSON text, not lists.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from assay.errors import ItemError
from assay.types import Item

# How a test command may start: the rest are pytest's own arguments.
_PYTEST_PREFIXES = (("pytest",), ("python", "-m", "pytest"), ("python3", "-m", "pytest"), ("py.test",))


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
    if not item.repo:
        raise TaskInvalid("a repo item needs `repo`, the name of a repository under ASSAY_REPOS")
    fail_to_pass = node_ids(item.FAIL_TO_PASS, "FAIL_TO_PASS")
    pass_to_pass = node_ids(item.PASS_TO_PASS, "PASS_TO_PASS")
    if not fail_to_pass and not pass_to_pass:
        raise TaskInvalid("a repo item needs FAIL_TO_PASS and/or PASS_TO_PASS tests")
    return RepoTask(
        repo=item.repo,
        fail_to_pass=fail_to_pass,
        pass_to_pass=pass_to_pass,
        base_commit=item.base_commit or None,
        test_patch=item.test_patch or "",
        pytest_args=pytest_args(item.test_cmd),
        gold_patch=item.patch,
        instance_id=item.instance_id,
    )
