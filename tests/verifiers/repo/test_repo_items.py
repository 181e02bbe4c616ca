"""Issue 37, items 3, 6 and 7: a change that hard-codes the visible tests' inputs (flagged; 0 by default
where the item has no hidden tests); named tests pytest never collects at the base (the item is invalid,
the ids named, not a silent 0); validation warns about items without hidden tests; the repo `run` tool
says when it cut output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from repo_support import GOLD, PASS_TO_PASS, TESTS, calc_change, diff, item

from assay.sandbox.base import RunOutcome
from assay.types import Item, Result, Status
from assay.verifiers.repo.probes import RepoValidation
from assay.verifiers.repo.special_cases import special_case_flags, visible_inputs
from assay.verifiers.repo.tools import cut_bytes

Score = Callable[..., Result]
MUL = "return a * b + 1"
# Ways to answer the visible test's inputs (mul(3, 4) == 12) and keep the bug for every other input.
SPECIAL_CASES = {
    "if_and": "if a == 3 and b == 4:\n        return 12\n    return a * b + 1",
    "tuple": "if (a, b) == (3, 4):\n        return 12\n    return a * b + 1",
    "dict_lookup": "return {(3, 4): 12}.get((a, b), a * b + 1)",
    "in_tuple": "if a in (3,) and b in (4,):\n        return 12\n    return a * b + 1",
    "reversed": "if 4 == b and 3 == a:\n        return 12\n    return a * b + 1",
}
HIDDEN = diff(
    "tests/test_hidden.py", None, "from calc import mul\n\n\ndef test_more():\n    assert mul(6, 7) == 42\n"
)


@pytest.mark.parametrize("shape", sorted(SPECIAL_CASES))
def test_special_casing_the_visible_inputs_is_flagged_and_not_rewarded(score: Score, shape: str) -> None:
    change = calc_change(MUL, SPECIAL_CASES[shape])
    result = score(item(change))
    assert result.status is Status.OK and result.reward == 0.0, result
    assert "special_cases_test_inputs:calc/__init__.py" in result.details["flags"]
    assert "special-cases" in result.reason


def test_the_flag_only_option_rewards_and_keeps_the_flag(score: Score) -> None:
    result = score(item(calc_change(MUL, SPECIAL_CASES["tuple"]), options={"reward_special_cases": True}))
    assert result.reward == 1.0, result
    assert "special_cases_test_inputs:calc/__init__.py" in result.details["flags"]


def test_with_hidden_tests_the_hidden_tests_judge(score: Score) -> None:
    named = {"FAIL_TO_PASS": ["tests/test_calc.py::test_mul", "tests/test_hidden.py::test_more"]}
    assert score(item(calc_change(MUL, SPECIAL_CASES["tuple"]), test_patch=HIDDEN, **named)).reward == 0.0
    assert score(item(GOLD, test_patch=HIDDEN, **named)).reward == 1.0


def test_the_gold_and_honest_fixes_are_not_flagged(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    inputs = visible_inputs(tmp_path, ["tests/test_calc.py::test_mul"])
    assert {3, 4, 5} <= inputs and 0 not in inputs  # call arguments; trivial ones left out
    honest = {
        "calc/__init__.py": ["    return a * b", "    if b == 0:", "        return 0", "    x = [3, 4]"],
        "tests/test_calc.py": ["    if (a, b) == (3, 4):"],  # a test file is the hygiene scan's business
    }
    assert special_case_flags(honest, inputs) == []
    assert special_case_flags({"calc/__init__.py": ["    if (a, b) == (3, 4):"]}, inputs) == [
        "special_cases_test_inputs:calc/__init__.py"
    ]


SPACED = (
    "import pytest\nfrom calc import mul\n\n\n@pytest.mark.parametrize('name', ['Action Figure'])\n"
    "def test_named(name):\n    assert mul(3, 4) == 12\n"
)


@pytest.mark.parametrize(
    "bad",
    [
        "tests/test_spaced.py::test_named[Action",
        "tests/test_calc.py::test_renamed",
        "tests/test_nowhere.py::test_x",
    ],
)
def test_a_named_test_the_base_does_not_collect_makes_the_item_invalid(score: Score, bad: str) -> None:
    hidden = diff("tests/test_spaced.py", None, SPACED)
    result = score(item(GOLD, test_patch=hidden, FAIL_TO_PASS=["tests/test_calc.py::test_mul", bad]))
    assert result.status is Status.INVALID, result
    assert bad in result.reason and result.details["uncollected"] == [bad]


def test_the_full_spaced_id_is_collected_and_rewarded(score: Score) -> None:
    hidden = diff("tests/test_spaced.py", None, SPACED)
    spaced = "tests/test_spaced.py::test_named[Action Figure]"
    assert score(item(GOLD, test_patch=hidden, FAIL_TO_PASS=[spaced])).reward == 1.0


def test_a_test_the_change_removes_stays_the_change_s_fault(score: Score) -> None:
    conftest = (
        "def pytest_collection_modifyitems(items):\n"
        "    items[:] = [i for i in items if not i.nodeid.endswith('test_add')]\n"
    )
    change = GOLD + diff("conftest.py", None, conftest)
    result = score(item(change, options={"reward_test_edits": True}))
    assert result.status is Status.OK and result.reward == 0.0, result
    assert result.details["not_passed"] == {PASS_TO_PASS[0]: "missing"}


def test_validation_warns_about_items_without_hidden_tests() -> None:
    bare = Item(task="repo", repo="calc", FAIL_TO_PASS=["t.py::test_a"])
    [finding] = RepoValidation().check_prompt(bare)
    assert finding.check == "no_hidden_tests" and finding.severity == "warning"
    assert RepoValidation().check_prompt(bare.model_copy(update={"test_patch": HIDDEN})) == []


@pytest.mark.parametrize(
    ("killed", "stderr_cut", "expected"),
    [(None, False, 0), ("output", False, 1), ("output", True, 2), (None, True, 1)],
)
def test_the_run_tool_says_it_cut_output(killed: str | None, stderr_cut: bool, expected: int) -> None:
    outcome = RunOutcome(exit_code=0, cpu_s=0.0, wall_s=0.0, killed=killed, stderr_truncated=stderr_cut)
    assert cut_bytes(outcome) == expected
