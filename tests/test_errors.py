"""One error tree: every exception Assay raises on purpose derives from `AssayError`, which carries the
status an item ends with; builtin roots are allowed only for internal control flow that never leaves its
module."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

from assay.errors import AssayError, ConfigError, ItemError, RewardUnavailable
from assay.rl_client.runs.data import DataError
from assay.types import Result, Status

SRC = Path(__file__).resolve().parents[1] / "src" / "assay"

# Signals caught by the code that raises them; none reaches a caller or an item.
INTERNAL_SIGNALS = {
    "ClientGone",
    "SlotWaitTimeout",
    "GoldUnusable",
    "TooCostly",
    "PoolStalled",
    "TooMuch",
    "CopyTooLarge",  # sql: a perturbed copy would be too large; the check is skipped and says so
    "CutShort",  # sql: the item deadline cut a prediction short on a perturbed copy; caught in dependence.py
    "PatchRejected",  # repo: the change does not apply; the scorer answers ok, reward 0
    "EpisodeError",  # openenv: an episode's refusal, answered as OpenEnv's error frame or an HTTP refusal
    "ShapingInputError",  # groups: a group that cannot be shaped; it ends as stats.shaping.error
    "ClusteringTimeout",  # groups: clustering past its budget; the group reports clusters_unavailable
    "Refused",  # math: a text outside direct.py's subset; read() catches it and the library parses the text
    # The sandbox harness runs on the sandbox's own Python and never imports assay.
    "NotPlain",
    "ProgramError",
    "Broken",
}


def _builtin_rooted_exceptions() -> dict[str, str]:
    """Classes in src/ whose bases are only builtin exceptions (a root outside the tree), by name."""
    found = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef) or not node.bases:
                continue
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            if len(bases) == len(node.bases) and all(
                isinstance(getattr(builtins, b, None), type)
                and issubclass(getattr(builtins, b), BaseException)
                for b in bases
            ):
                found[node.name] = str(path.relative_to(SRC))
    return found


# Raised past a trainer's `except Exception` on purpose: verl and TRL feed an Exception's text to the
# policy as the tool's output, so Assay's failure must fail the rollout instead (clients.RolloutAborted).
PAST_TRAINERS = {"RolloutAborted"}


def test_every_exception_raised_on_purpose_is_in_the_tree() -> None:
    roots = _builtin_rooted_exceptions()
    assert "AssayError" in roots  # the walk sees what it should
    assert set(roots) - {"AssayError"} <= INTERNAL_SIGNALS | PAST_TRAINERS, roots


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ItemError("no reference"), Status.INVALID),
        (ConfigError("bad path"), Status.ERROR),
        (RewardUnavailable("timeout"), Status.ERROR),
    ],
)
def test_an_error_maps_to_its_own_status(error: AssayError, status: Status) -> None:
    result = Result.of_error(error)
    assert (result.status, result.reason, result.reward) == (status, str(error), None)


def test_configuration_errors_stay_value_errors_for_existing_callers() -> None:
    assert issubclass(ConfigError, ValueError) and issubclass(DataError, ConfigError)
    assert issubclass(RewardUnavailable, RuntimeError)


def _drawn_tree() -> dict[str, tuple[str, str | None]]:
    """The tree in errors.py's docstring: class -> (its drawn parent, the status its line notes)."""
    import re

    import assay.errors

    drawn: dict[str, tuple[str, str | None]] = {}
    parents: list[str] = []
    for line in (assay.errors.__doc__ or "").splitlines():
        match = re.match(r"^([│ ├└─]*)(\w+)\b(.*)$", line)
        if match is None or not (match.group(1) or match.group(2) == "AssayError"):
            continue
        depth = len(match.group(1)) // 4
        noted = re.search(r'-> status "(\w+)"', match.group(3))
        parents[depth:] = [match.group(2)]
        if depth:
            drawn[match.group(2)] = (parents[depth - 1], noted.group(1) if noted else None)
    return drawn


def _every_assay_error() -> dict[str, type[AssayError]]:
    import importlib

    for module in (
        "assay.sandbox",
        "assay.judges.failures",
        "assay.prm.backends.base",
        "assay.rl_client.runs.data",
        "assay.rl_client.runs.rundir",
        "assay.sessions",
        "assay.verifiers.repo",
    ):
        importlib.import_module(module)
    importlib.import_module("assay.verifiers.sql.engines")
    found: dict[str, type[AssayError]] = {}
    todo: list[type[AssayError]] = [AssayError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("assay.") and sub.__name__ not in found:
                found[sub.__name__] = sub
                todo.append(sub)
    return found


def test_the_drawn_tree_is_every_assay_error_with_its_parent_and_status() -> None:
    drawn, real = _drawn_tree(), _every_assay_error()
    assert {"RewardUnavailable", "JudgeTimeout", "SandboxError", "PrmTimeout"} <= set(real)
    assert sorted(drawn) == sorted(real)
    for name, cls in real.items():
        parent, noted = drawn[name]
        assert cls.__bases__[0].__name__ == parent, f"{name} is drawn under {parent}"
        inherited = real[parent].status if parent in real else AssayError.status
        assert (noted or inherited) == cls.status, (
            f"{name} ends as {cls.status}, drawn as {noted or inherited}"
        )
        assert noted is None or noted != inherited, f"{name} notes the status it inherits"


def test_a_judge_timeout_ends_as_a_timeout() -> None:
    from assay.judges.failures import JudgeTimeout, failure_result

    assert Result.of_error(JudgeTimeout("slow")).status is Status.TIMEOUT
    assert failure_result(JudgeTimeout("slow"), raw="x").details == {"raw": "x"}
