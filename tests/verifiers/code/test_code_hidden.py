"""Hidden tests count in the reward and never show; a lookup table of the visible tests is flagged."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from assay_testing import code_scorer
from assay_testing import score_program as score
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.settings import CodeSettings, Settings
from assay.types import Status
from assay.verifiers.code import CodeScorer
from assay.verifiers.code.flags import FLAG, hardcoded_visible_outputs

VISIBLE = [{"stdin": "12\n", "stdout": "24"}, {"stdin": "13\n", "stdout": "26"}]
HIDDEN = [{"stdin": "21\n", "stdout": "424242"}, {"stdin": "5\n", "stdout": "10"}]
SECRET = "424242"  # the hidden expected output: must appear nowhere in a result
HONEST = "print(int(input()) * 2)"
# Prints a wrong answer on the hidden input, and the hidden expected output on its stderr.
if_21 = (
    "import sys\nn = int(input())\nif n == 21:\n    print(n * 20202, file=sys.stderr)\n"
    "print(n * 2 if n != 21 else 0)"
)
TABLE = 'answers = {"12": "24", "13": "26"}\nprint(answers[input().strip()])'


@pytest.fixture(scope="module")
def scorer() -> Iterator[CodeScorer]:
    yield from code_scorer(time_limit_s=2, memory_mb=256)


def test_hidden_tests_count_in_the_reward(scorer: CodeScorer) -> None:
    assert score(scorer, HONEST, VISIBLE, hidden_tests=HIDDEN[1:]).reward == 1.0
    result = score(scorer, if_21, VISIBLE, hidden_tests=HIDDEN)
    assert result.reward == 0.75
    assert result.details["passed"] == 3 and result.details["total"] == 4


def test_hidden_tests_are_never_shown(scorer: CodeScorer) -> None:
    result = score(scorer, if_21, VISIBLE, hidden_tests=HIDDEN)
    assert len(result.details["tests"]) == len(VISIBLE)
    assert result.details["hidden"] == {"total": 2, "passed": 1, "verdicts": {"passed": 1, "wrong_answer": 1}}
    text = result.model_dump_json()
    assert SECRET not in text


def test_hidden_assert_tests_show_no_stderr(scorer: CodeScorer) -> None:
    program = "def add(a, b):\n    return a - b\n"
    hidden = [{"assert": "assert add(20, 1) == 424242, 'expected 424242'"}]
    result = score(scorer, program, [{"assert": "assert add(1, 0) == 1"}], hidden_tests=hidden)
    assert result.reward == 0.5
    assert SECRET not in result.model_dump_json()


def test_hidden_tests_never_leave_the_http_service() -> None:
    item = {"task": "code", "response": f"```python\n{if_21}\n```", "tests": VISIBLE, "hidden_tests": HIDDEN}
    settings = Settings(code=CodeSettings(time_limit_s=2, memory_mb=256, slots=1))
    with TestClient(create_app(settings)) as client:
        body = client.post("/v1/rewards", json={"items": [item]}).text
        bad = client.post("/v1/rewards", json={"items": [{**item, "options": {"nope": 1}}]}).text
    assert json.loads(body)["results"][0]["reward"] == 0.75
    assert SECRET not in body and SECRET not in bad


def test_a_hidden_test_of_a_bad_shape_is_invalid_without_echoing_it(scorer: CodeScorer) -> None:
    result = score(scorer, HONEST, VISIBLE, hidden_tests=[{"stdin": "1", "secret": SECRET}])
    assert result.status is Status.INVALID
    assert "hidden_tests" in result.reason and SECRET not in result.reason


def test_only_hidden_tests_is_a_valid_item(scorer: CodeScorer) -> None:
    result = score(scorer, HONEST, [], hidden_tests=HIDDEN[1:])
    assert result.reward == 1.0 and result.details["tests"] == []


def test_a_lookup_table_that_fails_the_hidden_tests_is_flagged_and_earns_nothing(scorer: CodeScorer) -> None:
    flagged = score(scorer, TABLE, VISIBLE, hidden_tests=HIDDEN)
    assert flagged.details.get("flags") == [FLAG] and flagged.reward == 0.0
    assert flagged.details["passed"] == 2  # the tests it passed are still counted in details
    assert "flags" not in score(scorer, HONEST, VISIBLE, hidden_tests=HIDDEN[1:]).details


def test_a_lookup_table_of_inputs_and_outputs_is_flagged_without_hidden_tests(scorer: CodeScorer) -> None:
    calls = [
        {"fn_name": "sq", "args": [12], "expected": 144},
        {"fn_name": "sq", "args": [15], "expected": 225},
    ]
    table = "def sq(x):\n    return {12: 144, 15: 225}[x]\n"
    flagged = score(scorer, table, calls)
    assert flagged.details.get("flags") == [FLAG] and flagged.reward == 0.0
    assert "flags" not in score(scorer, "def sq(x):\n    return x * x\n", calls).details


def test_short_outputs_never_flag() -> None:
    tests = [{"stdin": "1", "stdout": "1"}, {"stdin": "0", "stdout": "0"}]
    details = {"tests": [{"verdict": "passed"}] * 2}
    assert not hardcoded_visible_outputs("print(1 if input() == '1' else 0)", tests, details)
