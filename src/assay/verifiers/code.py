"""The `code` task: run the response's program against its tests in the sandbox, compare outside it.

Item: `response` (the code is the last fenced block in the item's language, else the last untagged
block, else the whole response when it has no fence), `language` (python, cpp, javascript, java), and
`tests`, each one of:

- `{"stdin": "...", "stdout": "..."}`: stdin/stdout; checked by `options.checker` (tokens by default,
  exact, or float with `options.float_tol`);
- `{"fn_name": "f", "args": [...], "expected": ...}`: a call (LiveCodeBench call-based style; a method
  of `class Solution` when the program defines one). The return value is serialised to JSON inside the
  sandbox and compared here, so a custom `__eq__` cannot pass;
- `{"assert": "assert f(1) == 2"}`: assert-style (HumanEval/MBPP): the code is appended after the
  program and passes only if a per-test nonce, released after the last assert, comes back (an `exit(0)`
  before the asserts fails). Python only, like function calls.

Per-test verdicts: passed, wrong_answer, runtime_error, time_limit, memory_limit, output_limit,
compile_error. The policy's TLE/MLE is `ok` with its reward; our own failure (a crashed slot, overload)
is `error`, never a reward of 0. See `assay.sandbox` for what the sandbox covers and what it does not.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import threading
from typing import Any, ClassVar, Literal

from pydantic import Field

from assay.registry import Scorer
from assay.sandbox import (
    COMPILE_ERROR,
    PASSED,
    RUNTIME_ERROR,
    TIME_LIMIT,
    WRONG_ANSWER,
    Executor,
    Language,
    Limits,
    RunOutcome,
    SandboxError,
    TestInput,
    create_executor,
    lookup,
)
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions

_FENCE = re.compile(r"```[ \t]*([^\n`]*)\n(.*?)```", re.DOTALL)


class CodeOptions(TaskOptions):
    time_limit_s: float | None = Field(None, gt=0, le=60, description="CPU seconds per test.")
    memory_mb: int | None = Field(None, ge=16, le=16384, description="Memory per test, MiB.")
    scoring: Literal["fraction", "all"] = Field("fraction", description="Fraction passed, or all-or-nothing.")
    stop_on_first_failure: bool = Field(False, description="Skip the remaining tests after a failure.")
    checker: Literal["tokens", "exact", "float"] = Field("tokens", description="stdout comparison.")
    float_tol: float = Field(
        1e-6, ge=0, allow_inf_nan=False, description="Absolute and relative tolerance of the float checker."
    )


def extract_code(response: str, language: Language) -> str | None:
    """The last fenced block tagged with the language, else the last untagged one, else the response."""
    blocks = [(tag.strip().lower(), body) for tag, body in _FENCE.findall(response)]
    if not blocks:
        return response if "```" not in response else None
    tags = {language.name, *language.aliases}
    for wanted in (lambda t: t in tags, lambda t: t == ""):
        for tag, body in reversed(blocks):
            if wanted(tag):
                return body
    return None


def _tokens(text: str) -> list[str]:
    return text.split()


def _same_float(a: str, b: str, tol: float) -> bool:
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if math.isnan(x) or math.isnan(y):
        return False
    return math.isclose(x, y, rel_tol=tol, abs_tol=tol)


def check_stdout(actual: bytes, expected: str, checker: str, tol: float) -> bool:
    """Compare program output with the expected text (invalid UTF-8 never matches)."""
    try:
        text = actual.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if checker == "exact":
        return text == expected
    got, want = _tokens(text), _tokens(expected)
    if checker == "float":
        return len(got) == len(want) and all(_same_float(a, b, tol) for a, b in zip(got, want, strict=True))
    return got == want


def same_json(a: Any, b: Any) -> bool:
    """Structural equality of JSON values; bools are not numbers, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-9))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def parse_tests(raw: list[dict[str, Any]], language: Language) -> tuple[list[TestInput], list[Any]]:
    """Split each test into what the program sees and what stays here; ValueError says what is wrong."""
    inputs: list[TestInput] = []
    expected: list[tuple[str, Any]] = []
    for number, test in enumerate(raw):
        keys = set(test)
        if keys == {"stdin", "stdout"} or keys == {"stdout"}:
            stdin, stdout = test.get("stdin", ""), test["stdout"]
            if not isinstance(stdin, str) or not isinstance(stdout, str):
                raise ValueError(f"test {number}: stdin and stdout must be strings")
            inputs.append(TestInput(stdin=stdin.encode()))
            expected.append(("stdout", stdout))
        elif keys == {"fn_name", "args", "expected"}:
            if not isinstance(test["fn_name"], str) or not isinstance(test["args"], list):
                raise ValueError(f"test {number}: fn_name must be a string and args a list")
            inputs.append(TestInput(fn_name=test["fn_name"], args=tuple(test["args"])))
            expected.append(("json", json.loads(json.dumps(test["expected"]))))
        elif keys == {"assert"}:
            if not isinstance(test["assert"], str):
                raise ValueError(f"test {number}: assert must be a string of code")
            inputs.append(TestInput(assert_code=test["assert"], nonce=secrets.token_hex(16)))
            expected.append(("nonce", None))
        else:
            raise ValueError(
                f"test {number} has keys {sorted(keys)};"
                " expected stdin/stdout, fn_name/args/expected or assert"
            )
        if expected[-1][0] != "stdout" and language.name != "python":
            raise ValueError(f"test {number}: function-call and assert tests need language python")
    return inputs, expected


def judge(
    outcome: RunOutcome, test: TestInput, want: tuple[str, Any], options: CodeOptions, limit_s: float
) -> str:
    """The verdict of one test; comparisons happen here, outside the sandbox."""
    verdict = outcome.status
    if verdict == PASSED and outcome.cpu_s > limit_s:
        return TIME_LIMIT
    kind, value = want
    if kind == "nonce":
        if outcome.result == test.nonce.encode():
            return PASSED if verdict == PASSED else verdict
        if verdict == RUNTIME_ERROR and b"AssertionError" in outcome.stderr:
            return WRONG_ANSWER
        return WRONG_ANSWER if verdict == PASSED else verdict
    if verdict != PASSED:
        return verdict
    if kind == "stdout":
        return (
            PASSED
            if check_stdout(outcome.stdout, value, options.checker, options.float_tol)
            else WRONG_ANSWER
        )
    try:
        got = json.loads(outcome.result)
    except ValueError:
        return WRONG_ANSWER
    return PASSED if same_json(got, value) else WRONG_ANSWER


class CodeScorer(Scorer):
    name: ClassVar[str] = "code"
    description: ClassVar[str] = "Run the program in a sandbox against stdin/stdout, call or assert tests."
    Options: ClassVar[type[TaskOptions]] = CodeOptions
    item_fields: ClassVar[tuple[str, ...]] = ("response", "language", "tests")
    runs_in = "thread"
    gate: ClassVar[str] = "sandbox"  # the engine hands out sandbox slots fairly (assay.scheduling)

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._executor: Executor | None = None
        self._lock = threading.Lock()

    @property
    def executor(self) -> Executor:
        """The sandbox pool, started on first use (slots themselves start lazily too)."""
        with self._lock:
            if self._executor is None:
                self._executor = create_executor(self.settings.code)
            return self._executor

    def limits(self, options: CodeOptions) -> Limits:
        code = self.settings.code
        return Limits(
            time_s=options.time_limit_s or code.time_limit_s,
            memory_mb=options.memory_mb or code.memory_mb,
            stdout_bytes=code.max_output_bytes,
            processes=code.processes,
        )

    def deadline_s(self, item: Item, options: TaskOptions) -> float:
        assert isinstance(options, CodeOptions)
        limits = self.limits(options)
        tests = len(item.tests or ())
        compile_s = self.settings.code.compile_timeout_s * 2 + 5
        return self.settings.code.deadline_s + compile_s + tests * (limits.wall + 0.5)

    def score(self, item: Item, options: TaskOptions) -> Result:
        assert isinstance(options, CodeOptions)
        language = lookup(item.language)
        if language is None:
            return Result.invalid(f'unknown language "{item.language}" (python, cpp, javascript, java)')
        if not language.available():
            return Result.error(f"language {language.name} is not installed on this server")
        if not item.tests:
            return Result.invalid("code items need a non-empty list of tests")
        if len(item.tests) > self.settings.code.max_tests:
            return Result.invalid(f"{len(item.tests)} tests; at most {self.settings.code.max_tests}")
        try:
            inputs, expected = parse_tests(item.tests, language)
        except (ValueError, TypeError) as exc:
            return Result.invalid(str(exc))
        source = extract_code(item.response or "", language)
        if source is None or not source.strip():
            return Result.verdict(False, f"no {language.name} code found in the response")
        return self._run(language, source, inputs, expected, options)

    def _run(
        self,
        language: Language,
        source: str,
        inputs: list[TestInput],
        expected: list[Any],
        options: CodeOptions,
    ) -> Result:
        limits = self.limits(options)
        verdicts: list[dict[str, Any]] = []

        def on_result(index: int, outcome: RunOutcome) -> bool:
            verdict = judge(outcome, inputs[index], expected[index], options, limits.time_s)
            entry = {"verdict": verdict, **outcome.details()}
            if verdict not in (PASSED, WRONG_ANSWER) and outcome.stderr:
                entry["stderr"] = outcome.stderr[-500:].decode("utf-8", "replace")
            verdicts.append(entry)
            return verdict == PASSED or not options.stop_on_first_failure

        try:
            execution = self.executor.execute(
                language, source, inputs, limits, on_result, wait_s=self.settings.code.deadline_s
            )
        except SandboxError as exc:
            return Result.error(f"sandbox failure: {exc}")
        if execution.compile_error is not None:
            details: dict[str, Any] = {
                "language": language.name,
                "compile_error": execution.compile_error[-2000:],
                "tests": [{"verdict": COMPILE_ERROR}] * len(inputs),
            }
            return Result.verdict(False, "compile error", extracted=source, details=details)
        passed = sum(v["verdict"] == PASSED for v in verdicts)
        verdicts += [{"verdict": "not_run"}] * (len(inputs) - len(verdicts))
        total = len(inputs)
        correct = passed == total
        reward = float(correct) if options.scoring == "all" else passed / total
        first_bad = next((v["verdict"] for v in verdicts if v["verdict"] != PASSED), None)
        reason = f"{passed}/{total} tests passed" + (f" (first failure: {first_bad})" if first_bad else "")
        details = {"language": language.name, "passed": passed, "total": total, "tests": verdicts}
        if execution.cached_build:
            details["cached_build"] = True
        return Result(
            status="ok", correct=correct, reward=reward, reason=reason, extracted=source, details=details
        )

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.pool.close()
                self._executor = None
