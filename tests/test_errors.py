"""One error tree: every exception Assay raises on purpose derives from `AssayError`, which carries the
status an item ends with; builtin roots are allowed only for internal control flow that never leaves its
module."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

from assay.errors import AssayError, ConfigError, ItemError, RewardUnavailable
from assay.rl_client.data import DataError
from assay.types import Result, Status

SRC = Path(__file__).resolve().parents[1] / "src" / "assay"

# Signals caught by the code that raises them; none reaches a caller or an item.
INTERNAL_SIGNALS = {"ClientGone", "SlotWaitTimeout", "GoldUnusable", "TooCostly", "PoolStalled"}


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


def test_every_exception_raised_on_purpose_is_in_the_tree() -> None:
    roots = _builtin_rooted_exceptions()
    assert "AssayError" in roots  # the walk sees what it should
    assert set(roots) - {"AssayError"} <= INTERNAL_SIGNALS, roots


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
