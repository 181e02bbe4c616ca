"""HumanEval/MBPP test shapes, tests that cannot fail, and what a failed test tells the user."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from assay_testing import code_scorer

from assay.types import Item, Result
from assay.verifiers.code import CodeScorer

# HumanEval's own shape: the `test` field defines check(candidate) and never calls it.
CHECK = (
    "METADATA = {}\n\n\ndef check(candidate):\n    assert candidate(2, 3) == 5\n"
    "    assert candidate(-1, 1) == 0\n"
)
HELPER_THEN_ENTRY = "def helper(x):\n    return x\n\n\ndef add(a, b):\n    return helper(a) + b\n"


@pytest.fixture(scope="module")
def scorer() -> Iterator[CodeScorer]:
    yield from code_scorer(slots=1, tmpfs_mb=64, processes=32, memory_mb=256, max_stderr_bytes=4096)


def score(scorer: CodeScorer, program: str, tests: list[dict[str, Any]]) -> Result:
    item = Item(task="code", response=f"```python\n{program}\n```", tests=tests)
    return scorer.score(item, CodeScorer.parse_options({}))


@pytest.mark.parametrize(
    "tests",
    [
        [{"check": CHECK, "entry_point": "add"}],
        [{"assert": CHECK, "entry_point": "add"}],
        [{"assert": CHECK}],  # entry point: the program's last function
    ],
    ids=["check+entry_point", "assert+entry_point", "uncalled check"],
)
def test_check_shapes_pass_right_and_fail_wrong(scorer: CodeScorer, tests: list[dict[str, Any]]) -> None:
    assert score(scorer, HELPER_THEN_ENTRY, tests).reward == 1.0
    assert score(scorer, HELPER_THEN_ENTRY.replace("+ b", "- b"), tests).reward == 0.0
    assert score(scorer, "def add(a, b):\n    return None", tests).reward == 0.0


def test_uncalled_check_is_called_and_said_so(scorer: CodeScorer) -> None:
    result = score(scorer, "def add(a, b):\n    return None", [{"assert": CHECK}])
    assert result.reward == 0.0
    assert result.details["warnings"] == ["test 0 defines check() but never calls it: called check(add)"]


def test_uncalled_check_without_any_function_is_a_warning(scorer: CodeScorer) -> None:
    result = score(scorer, "add = lambda a, b: None", [{"assert": CHECK}])
    assert "asserts nothing" in result.details["warnings"][0]


def test_a_test_without_assert_or_call_is_warned_about(scorer: CodeScorer) -> None:
    result = score(
        scorer, "def f():\n    return 1", [{"assert": "x = 1\ny = [x]"}, {"assert": "assert f() == 1"}]
    )
    assert result.details["warnings"] == ["test 0 contains no assert and no call: it cannot fail"]
    assert result.reward == 1.0  # warned, still run as given


def test_check_test_must_define_check(scorer: CodeScorer) -> None:
    result = score(scorer, "def f(): pass", [{"check": "assert f() is None", "entry_point": "f"}])
    assert result.status == "invalid" and "check(candidate)" in (result.reason or "")


def test_stderr_over_its_cap_is_cut_and_noted_not_failed(scorer: CodeScorer) -> None:
    program = "import sys\nsys.stderr.write('w' * 100_000)\nprint(input())"
    result = score(scorer, program, [{"stdin": "ok", "stdout": "ok"}])
    assert result.reward == 1.0
    assert result.details["tests"][0]["stderr_truncated"] is True


def test_failed_verdicts_carry_stderr(scorer: CodeScorer) -> None:
    program = "import sys\nprint('debug: got', input(), file=sys.stderr)\nprint(0)"
    result = score(scorer, program, [{"stdin": "7", "stdout": "7"}])
    test = result.details["tests"][0]
    assert test["verdict"] == "wrong_answer" and "debug: got 7" in test["stderr"]


def test_exit_before_the_asserts_is_explained(scorer: CodeScorer) -> None:
    program = "import sys\ndef add(a, b):\n    return a + b\nsys.exit(0)"
    test = score(scorer, program, [{"assert": "assert add(1, 2) == 3"}]).details["tests"][0]
    assert test["verdict"] == "wrong_answer"
    assert "exited with status 0 before the test's asserts ran" in test["why"]


def test_a_main_block_does_not_run_under_call_and_assert_tests(scorer: CodeScorer) -> None:
    program = "import sys\ndef add(a, b):\n    return a + b\nif __name__ == '__main__':\n    sys.exit(0)"
    assert score(scorer, program, [{"assert": "assert add(1, 2) == 3"}]).reward == 1.0
    assert score(scorer, program, [{"fn_name": "add", "args": [1, 2], "expected": 3}]).reward == 1.0


def test_a_tests_own_main_block_runs(scorer: CodeScorer) -> None:
    test = (
        "def check(candidate):\n    assert candidate(1, 2) == 4\n\nif __name__ == '__main__':\n    check(add)"
    )
    assert score(scorer, "def add(a, b):\n    return a + b", [{"assert": test}]).reward == 0.0
