"""The code scorer end to end: languages, test shapes, checkers, verdicts, scoring, harness attacks."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.sandbox import lookup
from assay.sandbox.bwrap import find_bwrap
from assay.settings import CodeSettings, Settings
from assay.types import Item, Result, Status
from assay.verifiers.code import CodeOptions, CodeScorer
from assay.verifiers.code.blocks import extract_code
from assay.verifiers.code.compare import check_stdout, same_json


def _can_sandbox() -> bool:
    try:
        find_bwrap()
    except Exception:
        return False
    return True


def _has(language: str) -> bool:
    lang = lookup(language)
    return lang is not None and lang.available()


@pytest.fixture(scope="module")
def scorer() -> Iterator[CodeScorer]:
    if not _can_sandbox():
        pytest.skip("bubblewrap cannot run here")
    settings = Settings(code=CodeSettings(slots=2, tmpfs_mb=64, processes=32, time_limit_s=2, memory_mb=256))
    instance = CodeScorer(settings)
    yield instance
    instance.close()


def score(scorer: CodeScorer, response: str, tests: list[dict[str, Any]], **extra: Any) -> Result:
    options = extra.pop("options", {})
    item = Item(task="code", response=response, tests=tests, **extra)
    return scorer.score(item, CodeScorer.parse_options(options))


def fence(code: str, tag: str = "python") -> str:
    return f"Here you go:\n```{tag}\n{textwrap.dedent(code).strip()}\n```\n"


SUM = [{"stdin": "1 2\n", "stdout": "3\n"}, {"stdin": "5 7", "stdout": "12"}]


def verdicts(result: Result) -> list[str]:
    return [t["verdict"] for t in result.details["tests"]]


def test_python_stdin_stdout_passes(scorer: CodeScorer) -> None:
    result = score(scorer, fence("print(sum(map(int, input().split())))"), SUM)
    assert result.status is Status.OK and result.reward == 1.0 and result.correct


@pytest.mark.skipif(not _has("cpp"), reason="cpp toolchain not installed")
def test_cpp_passes_and_compiles_once(scorer: CodeScorer) -> None:
    code = "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<'\\n';}"
    first = score(scorer, fence(code, "cpp"), SUM, language="cpp")
    again = score(scorer, fence(code, "cpp"), SUM, language="cpp")
    assert first.reward == 1.0 and again.reward == 1.0
    assert again.details.get("cached_build") is True


@pytest.mark.skipif(not _has("javascript"), reason="javascript toolchain not installed")
def test_javascript_passes(scorer: CodeScorer) -> None:
    code = (
        "const [a,b]=require('fs').readFileSync(0,'utf8').trim().split(/\\s+/).map(Number);console.log(a+b)"
    )
    result = score(scorer, fence(code, "javascript"), SUM, language="javascript")
    assert result.reward == 1.0, result.details


@pytest.mark.skipif(not _has("java"), reason="java toolchain not installed")
def test_java_passes(scorer: CodeScorer) -> None:
    code = """
    import java.util.*;
    public class Solution { public static void main(String[] x) {
        Scanner s = new Scanner(System.in); System.out.println(s.nextLong() + s.nextLong()); } }
    """
    result = score(scorer, fence(code, "java"), SUM, language="java")
    assert result.reward == 1.0, result.details


@pytest.mark.skipif(not _has("cpp"), reason="cpp toolchain not installed")
def test_cpp_compile_error_is_ok_with_reward_zero(scorer: CodeScorer) -> None:
    result = score(scorer, fence("int main( {", "cpp"), SUM, language="cpp")
    assert result.status is Status.OK and result.reward == 0.0
    assert verdicts(result) == ["compile_error", "compile_error"]


def test_fraction_and_all_or_nothing(scorer: CodeScorer) -> None:
    tests = [*SUM, {"stdin": "1 1", "stdout": "3"}]
    code = fence("print(sum(map(int, input().split())))")
    assert score(scorer, code, tests).reward == pytest.approx(2 / 3)
    assert score(scorer, code, tests, options={"scoring": "all"}).reward == 0.0


def test_stop_on_first_failure_skips_the_rest(scorer: CodeScorer) -> None:
    tests = [{"stdin": "1 1", "stdout": "3"}, *SUM]
    result = score(
        scorer, fence("print(sum(map(int, input().split())))"), tests, options={"stop_on_first_failure": True}
    )
    assert verdicts(result) == ["wrong_answer", "not_run", "not_run"]
    assert result.reward == 0.0


def test_verdicts_per_test(scorer: CodeScorer) -> None:
    code = fence("""
        n = int(input())
        if n == 1: print(1)
        elif n == 2: print(3)
        elif n == 3: raise ValueError
        elif n == 4:
            while True: pass
        elif n == 5: x = bytearray(1 << 30)
        else:
            while True: print("y" * 100000)
    """)
    tests = [{"stdin": f"{n}\n", "stdout": "1"} for n in range(1, 7)]
    result = score(scorer, code, tests, options={"time_limit_s": 1, "memory_mb": 128})
    assert verdicts(result) == [
        "passed",
        "wrong_answer",
        "runtime_error",
        "time_limit",
        "memory_limit",
        "output_limit",
    ]
    assert result.status is Status.OK
    assert all("cpu_s" in t and "wall_s" in t for t in result.details["tests"])


def test_function_call_tests(scorer: CodeScorer) -> None:
    code = fence("""
        class Solution:
            def twoSum(self, nums, target):
                seen = {}
                for i, x in enumerate(nums):
                    if target - x in seen:
                        return [seen[target - x], i]
                    seen[x] = i
    """)
    tests = [
        {"fn_name": "twoSum", "args": [[2, 7, 11, 15], 9], "expected": [0, 1]},
        {"fn_name": "twoSum", "args": [[3, 3], 6], "expected": [1, 0]},
    ]
    assert verdicts(score(scorer, code, tests)) == ["passed", "wrong_answer"]


def test_eq_override_cannot_pass_a_call_test(scorer: CodeScorer) -> None:
    code = fence("""
        class Anything:
            def __eq__(self, other): return True
        class Int(int):
            def __eq__(self, other): return True
        def f(x): return Anything()
        def g(x): return Int(0)
    """)
    tests = [{"fn_name": "f", "args": [1], "expected": 5}, {"fn_name": "g", "args": [1], "expected": 5}]
    result = score(scorer, code, tests)
    assert result.reward == 0.0
    assert verdicts(result) == ["wrong_answer", "wrong_answer"]  # not plain data: a failed test


def test_assert_tests(scorer: CodeScorer) -> None:
    code = fence("def add(a, b):\n    return a + b")
    tests = [{"assert": "assert add(1, 2) == 3"}, {"assert": "assert add(1, 2) == 4"}]
    assert verdicts(score(scorer, code, tests)) == ["passed", "wrong_answer"]


@pytest.mark.parametrize("exit_call", ["exit(0)", "import sys; sys.exit(0)", "import os; os._exit(0)"])
def test_exit_before_the_asserts_fails(scorer: CodeScorer, exit_call: str) -> None:
    code = fence(f"def add(a, b):\n    return 0\n{exit_call}")
    result = score(scorer, code, [{"assert": "assert add(1, 2) == 3"}])
    assert result.reward == 0.0 and verdicts(result) == ["wrong_answer"]


@pytest.mark.parametrize("exit_call", ["exit(0)", "import os; os._exit(0)"])
def test_a_program_gone_before_the_evaluators_first_call_is_a_wrong_answer(
    scorer: CodeScorer, exit_call: str
) -> None:
    """The program exits at import while the evaluator still compiles a long test, so the evaluator's
    first request meets a pipe no one reads: that is the program gone (wrong answer), not an evaluator
    killed by SIGPIPE before it writes a verdict (runtime error; the test above lost that race in 6 of
    15 runs before the evaluator ignored SIGPIPE, this one always)."""
    code = fence(f"def add(a, b):\n    return 0\n{exit_call}")
    padding = "".join(f"_unused_{i} = [{i}, {i} + 1, str({i})]\n" for i in range(6_000))
    result = score(scorer, code, [{"assert": padding + "assert add(1, 2) == 3"}])
    assert result.reward == 0.0 and verdicts(result) == ["wrong_answer"]


def test_expected_output_is_unreachable_from_inside(scorer: CodeScorer) -> None:
    secret = "EXPECTED-7f3a9c"
    code = fence("""
        import os, sys, gc
        found = []
        frame = sys._getframe()
        while frame is not None:
            found.append(repr(frame.f_locals)[:100000]); found.append(repr(frame.f_globals)[:100000])
            frame = frame.f_back
        found.append(repr(os.environ))
        for obj in gc.get_objects():
            if isinstance(obj, (str, bytes)):
                found.append(repr(obj))
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            for name in ("environ", "cmdline"):
                try: found.append(repr(open(f"/proc/{pid}/{name}", "rb").read()))
                except OSError: pass
        blob = "\\n".join(found)
        print("EXPECTED-" in blob)
    """)
    result = score(scorer, code, [{"stdin": "", "stdout": secret}])
    assert verdicts(result) == ["wrong_answer"]
    assert result.details["tests"][0].get("stderr") is None


def test_no_code_block_in_the_language_is_wrong_not_invalid(scorer: CodeScorer) -> None:
    result = score(scorer, "```cpp\nint main(){}\n```", SUM)
    assert result.status is Status.OK and result.reward == 0.0


@pytest.mark.parametrize(
    ("tests", "language"),
    [
        ([], "python"),
        ([{"stdin": "1"}], "python"),
        ([{"fn_name": "f", "args": [], "expected": 1}], "cpp"),
        # A number is read as its text (issue 31); a list is not.
        ([{"stdin": ["1"], "stdout": "1"}], "python"),
        (SUM, "cobol"),
    ],
)
def test_malformed_items_are_invalid(scorer: CodeScorer, tests: list[dict[str, Any]], language: str) -> None:
    assert score(scorer, "print(1)", tests, language=language).status is Status.INVALID


def test_deadline_grows_with_tests_and_limits(scorer: CodeScorer) -> None:
    small = Item(task="code", response="", tests=SUM)
    big = Item(task="code", response="", tests=SUM * 10)
    opts = CodeOptions()

    def deadline(item: Item, options: CodeOptions) -> float:
        return CodeScorer.deadline_for(scorer.settings, item, options)

    assert deadline(big, opts) > deadline(small, opts)
    assert deadline(small, CodeOptions(time_limit_s=10)) > deadline(small, opts)


@pytest.mark.parametrize(
    ("actual", "expected", "checker", "same"),
    [
        (b"1 2\n3\n", "1 2 3", "tokens", True),
        (b"1 2\n3\n", "1 2 3", "exact", False),
        (b"1 2\n", "1 2\n", "exact", True),
        (b"0.3333333", "0.33333333333", "float", True),
        (b"0.34", "0.33", "float", False),
        (b"nan", "nan", "float", True),
        (b"\xff", "\xff", "tokens", False),  # invalid UTF-8 never matches
        (b"", "", "tokens", True),
    ],
)
def test_checkers(actual: bytes, expected: str, checker: str, same: bool) -> None:
    assert check_stdout(actual, expected, checker, 1e-6) is same


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (1, 1.0, True),
        (True, 1, False),
        ([1, [2]], [1, [2]], True),
        ({"a": 1}, {"a": 2}, False),
        (None, None, True),
        ("1", 1, False),
    ],
)
def test_same_json(a: Any, b: Any, same: bool) -> None:
    assert same_json(a, b) is same


def test_extract_code_prefers_the_last_block_in_the_language() -> None:
    python = lookup("python")
    assert python is not None
    response = "```python\nA\n```\ntext\n```cpp\nB\n```\n```py\nC\n```\n```\nD\n```"
    assert extract_code(response, python) == "C\n"
    assert extract_code("print(1)", python) == "print(1)"
    assert extract_code("```\nX\n```", python) == "X\n"


CASES = Path(__file__).parents[2] / "cases" / "code.jsonl"


def test_case_file_labels_match_verdicts(scorer: CodeScorer) -> None:
    for line in CASES.read_text().splitlines():
        case = json.loads(line)
        label = case.pop("label")
        case.pop("category"), case.pop("note")
        item = Item.model_validate(case)
        if not _has(item.language or "python"):
            continue
        result = scorer.score(item, CodeScorer.parse_options(item.options))
        assert result.status is Status.OK, (case["id"], result.reason)
        assert result.correct is label, (case["id"], result.reason, result.details.get("tests"))
