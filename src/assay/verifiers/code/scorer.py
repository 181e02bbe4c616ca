"""The `code` task: run the response's program against its tests in the sandbox, compare outside it.

Item: `response` (the program is the block that defines what the tests call, else the longest complete
program among the blocks in the item's language or untagged; see `blocks`), `language` (python,
cpp, javascript, java, rust, go), and `tests`, each one of:

- `{"stdin": "...", "stdout": "..."}`: stdin/stdout; checked by `options.checker` (tokens by default,
  exact, or float with `options.float_tol`);
- `{"fn_name": "f", "args": [...], "expected": ...}`: a call (LiveCodeBench call-based style; a method
  of `class Solution` when the program defines one). The return value crosses as plain data (builtin
  types only, checked all the way down) and is compared here, so a custom `__eq__` cannot pass;
- `{"assert": "assert f(1) == 2"}`: assert-style (HumanEval/MBPP): the test code runs in an evaluator
  process that the program cannot reach; the program's names are proxies there, each call crossing as
  plain data, and only the evaluator writes the verdict (`assay.sandbox._harness`, issue 28).
  Python only, like function calls. An assert test that defines `check`
  but never calls it (HumanEval's `test` field) gets `check(<entry point>)` appended: the test's
  `entry_point`, else the last function the program defines; a test with no assert and no call is run
  but warned about in `details["warnings"]`;
- `{"check": "def check(candidate): ...", "entry_point": "f"}`: HumanEval/MBPP's shape, run as the
  assert test `check(f)`.

stderr is in `details` for every failed test (cut to `code.max_stderr_bytes`, which never fails a test).

`hidden_tests` (same shapes) count in the reward like `tests` but are never returned: `details` gives
only their counts. A program that tables the visible tests' inputs to their outputs gets reward 0 and
`details["flags"]` holds `hardcoded_visible_outputs` (see `flags`); `options.lookup_tables: "flag"`
keeps the reward and only flags it.

Per-test verdicts: passed, wrong_answer, runtime_error, time_limit, memory_limit, output_limit,
compile_error. The policy's TLE/MLE is `ok` with its reward; our own failure (a crashed slot, overload)
is `error`, never a reward of 0. So is a Python program that failed importing a package the standard
runtime offers (`runtime-packages.txt`: numpy, scipy, ...) but this server's prefix lacks: the reason
names the module and the fix. A module outside that list (made up, or one no runtime offers) stays the
program's failure (`ok`, `details.missing_module`), so a policy cannot escape a 0 by importing it.
See `assay.sandbox` for what the sandbox covers and what it does not.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import Field

from assay.registry import Audit, Equivalence, Scorer, Validation
from assay.sandbox import (
    COMPILE_ERROR,
    MEMORY_LIMIT,
    OUTPUT_LIMIT,
    PASSED,
    RUNTIME_ERROR,
    TIME_LIMIT,
    WRONG_ANSWER,
    Execution,
    Executor,
    Language,
    Limits,
    Program,
    RunOutcome,
    SandboxError,
    TestInput,
    create_executor,
    from_wire,
    lookup,
)
from assay.sandbox.languages import language_names
from assay.sandbox.runtime import (
    check_prefix,
    lacking_runtime_package,
    missing_module,
    missing_package_reason,
    offered,
    prefix_packages,
)
from assay.settings import CodeSettings, Settings
from assay.types import Item, Result, TaskOptions
from assay.verifiers.code.audit import CodeAudit
from assay.verifiers.code.blocks import assert_shape, extract_code, last_function, used_names
from assay.verifiers.code.compare import check_stdout, same_json
from assay.verifiers.code.equivalence import DIGEST, CodeEquivalence, observation, outputs_digest
from assay.verifiers.code.fields import CodeFields
from assay.verifiers.code.flags import hardcoded_visible_outputs, tabled
from assay.verifiers.code.probes import CodeValidation

__all__ = [
    "CodeOptions",
    "CodeScorer",
    "TestPlan",
    "check_stdout",
    "extract_code",
    "parse_tests",
    "same_json",
]
_STDERR_SHOWN = 2000  # characters of a failed test's stderr tail shown in details


class CodeOptions(TaskOptions):
    time_limit_s: float | None = Field(None, gt=0, le=60, description="CPU seconds per test.")
    memory_mb: int | None = Field(None, ge=16, le=16384, description="Memory per test, MiB.")
    scoring: Literal["fraction", "all"] = Field("fraction", description="Fraction passed, or all-or-nothing.")
    stop_on_first_failure: bool = Field(False, description="Skip the remaining tests after a failure.")
    checker: Literal["tokens", "exact", "float"] = Field("tokens", description="stdout comparison.")
    float_tol: float = Field(
        1e-6, ge=0, le=0.5, description="Absolute and relative tolerance of the float checker."
    )
    lookup_tables: Literal["zero", "flag"] = Field(
        "zero",
        description="A program that tables the visible tests (flag hardcoded_visible_outputs): reward 0,"
        " or only the flag with the reward its tests earned.",
    )


@dataclass
class TestPlan:
    """What the tests feed the program, what stays here to compare, and what they reveal of it."""

    __test__ = False  # not a pytest test class, despite the name

    inputs: list[TestInput]
    expected: list[tuple[str, Any]]
    entry_points: list[str] = field(default_factory=list)  # what the tests call: picks the code block
    warnings: list[str] = field(default_factory=list)
    uncalled_check: list[int] = field(default_factory=list)  # tests whose check() needs an entry point
    visible: int | None = None  # tests from this index on are the item's hidden_tests

    def hide(self, hidden: TestPlan) -> None:
        """Append the item's hidden tests: counted in the reward, never shown (`_run`)."""
        self.visible = len(self.inputs)
        self.uncalled_check += [self.visible + i for i in hidden.uncalled_check]
        self.inputs += hidden.inputs
        self.expected += hidden.expected
        self.entry_points = list(dict.fromkeys(self.entry_points + hidden.entry_points))
        self.warnings += [f"hidden {warning}" for warning in hidden.warnings]

    def resolve(self, source: str) -> None:
        """Call each uncalled `check` with the program's last function (HumanEval's entry point)."""
        entry = last_function(source)
        for index in self.uncalled_check:
            if entry is None:
                self.warnings.append(
                    f"test {index} defines check() but never calls it and the program"
                    " defines no function to call it with: the test asserts nothing"
                )
                continue
            test = self.inputs[index]
            code = f"{test.assert_code}\n\ncheck({entry})\n"
            self.inputs[index] = dataclasses.replace(test, assert_code=code, entry_point=entry)
            self.warnings.append(f"test {index} defines check() but never calls it: called check({entry})")


def parse_tests(raw: list[dict[str, Any]], language: Language) -> TestPlan:
    """Split each test into what the program sees and what stays here; ValueError says what is wrong."""
    plan = TestPlan(inputs=[], expected=[])
    for number, test in enumerate(raw):
        keys = set(test)
        if keys == {"stdin", "stdout"} or keys == {"stdout"}:
            stdin, stdout = test.get("stdin", ""), test["stdout"]
            if not isinstance(stdin, str) or not isinstance(stdout, str):
                raise ValueError(f"test {number}: stdin and stdout must be strings")
            plan.inputs.append(TestInput(stdin=stdin.encode()))
            plan.expected.append(("stdout", stdout))
        elif keys == {"fn_name", "args", "expected"}:
            if not isinstance(test["fn_name"], str) or not isinstance(test["args"], list):
                raise ValueError(f"test {number}: fn_name must be a string and args a list")
            plan.inputs.append(TestInput(fn_name=test["fn_name"], args=tuple(test["args"])))
            plan.expected.append(("json", json.loads(json.dumps(test["expected"]))))
            plan.entry_points.append(test["fn_name"])
        elif keys in ({"assert"}, {"assert", "entry_point"}, {"check", "entry_point"}):
            _add_assert(plan, number, test)
        else:
            raise ValueError(
                f"test {number} has keys {sorted(keys)}; expected stdin/stdout, fn_name/args/expected,"
                " assert (optionally with entry_point) or check/entry_point"
            )
        if plan.expected[-1][0] != "stdout" and language.name != "python":
            raise ValueError(f"test {number}: function-call and assert tests need language python")
    plan.entry_points = list(dict.fromkeys(plan.entry_points))
    return plan


def _add_assert(plan: TestPlan, number: int, test: dict[str, Any]) -> None:
    code, entry = test.get("assert", test.get("check")), test.get("entry_point")
    if not isinstance(code, str) or not (entry is None or (isinstance(entry, str) and entry.isidentifier())):
        raise ValueError(f"test {number}: assert/check must be a string of code and entry_point a name")
    shape = assert_shape(code)
    if "check" in test and not shape.defines_check:
        raise ValueError(f"test {number}: a check test must define check(candidate)")
    if shape.defines_check and not shape.calls_check:
        if entry is not None:
            code = f"{code}\n\ncheck({entry})\n"
        else:
            plan.uncalled_check.append(number)
    elif not shape.asserts_or_calls:
        plan.warnings.append(f"test {number} contains no assert and no call: it cannot fail")
    plan.entry_points += [entry] if entry is not None else used_names(code)
    plan.inputs.append(TestInput(assert_code=code, entry_point=entry))
    plan.expected.append(("harness", None))


def verdict_of(
    outcome: RunOutcome, test: TestInput, want: tuple[str, Any], options: CodeOptions, limit_s: float
) -> str:
    """The verdict of one test; comparisons happen here, outside the sandbox."""
    verdict = outcome.status
    if verdict == PASSED and outcome.cpu_s > limit_s:
        return TIME_LIMIT
    kind, value = want
    if kind == "harness":
        if verdict in (TIME_LIMIT, MEMORY_LIMIT, OUTPUT_LIMIT):  # the program's own limits come first
            return verdict
        frame = evaluator_verdict(outcome)
        if frame.get("gone") and outcome.exit_code == 0:  # exit(0) before the test finished
            return WRONG_ANSWER
        return str(frame["verdict"])
    if verdict != PASSED:
        return verdict
    if kind == "stdout":
        return (
            PASSED
            if check_stdout(outcome.stdout, value, options.checker, options.float_tol)
            else WRONG_ANSWER
        )
    got = call_result(outcome)
    return PASSED if "ok" in got and same_json(got["ok"], value) else WRONG_ANSWER


_NO_VERDICT = {"verdict": RUNTIME_ERROR, "why": "the test's evaluator ended without a verdict"}


def evaluator_verdict(outcome: RunOutcome) -> dict[str, Any]:
    """What an assert test's evaluator wrote (the program cannot write there); a runtime error if none."""
    try:
        frame = json.loads(outcome.result)
    except ValueError:
        return _NO_VERDICT
    known = (PASSED, WRONG_ANSWER, RUNTIME_ERROR, MEMORY_LIMIT)
    if not isinstance(frame, dict) or frame.get("verdict") not in known:
        return _NO_VERDICT
    return frame


def call_result(outcome: RunOutcome) -> dict[str, Any]:
    """A call test's result as JSON data (`{"ok": value}`), or why there is none (`{"why": ...}`).

    The program wrote the bytes, so they are decoded strictly: builtin data only, then viewed as JSON
    (tuples as lists, keys as strings) the way the expected value was given."""
    try:
        frame = json.loads(outcome.result)
        if not isinstance(frame, dict) or len(frame) != 1:
            raise ValueError("not a result frame")
        if "bad" in frame:
            return {"why": str(frame["bad"])}
        return {"ok": json.loads(json.dumps(from_wire(frame["ok"])))}
    except (ValueError, TypeError, KeyError, RecursionError):
        return {"why": "the call's result is not JSON data (a set, bytes, or a value that failed to cross)"}


def why_failed(outcome: RunOutcome, test: TestInput, verdict: str) -> str | None:
    """A sentence for the failures whose stderr alone does not say what happened."""
    if test.assert_code is not None and verdict != PASSED:
        frame = evaluator_verdict(outcome)
        if frame.get("gone") and outcome.exit_code == 0:
            return _EXITED.format(what="asserts")
        return frame.get("why")
    if test.fn_name is not None and verdict == WRONG_ANSWER:
        if outcome.exit_code == 0 and not outcome.result:
            return _EXITED.format(what="call")
        return call_result(outcome).get("why")
    return None


_EXITED = (
    "the program exited with status 0 before the test's {what} ran: a sys.exit(), exit() or"
    ' unittest.main() at top level or in an `if __name__ == "__main__":` block ends the run'
)


def per_test_limits(code: CodeSettings, options: CodeOptions, wall_s: float | None = None) -> Limits:
    """One test's limits: the item's options over the settings. With `wall_s`, a wall-clock limit that
    also bounds CPU time (one thread cannot use more CPU than wall time)."""
    return Limits(
        time_s=wall_s or options.time_limit_s or code.time_limit_s,
        wall_s=wall_s,
        memory_mb=options.memory_mb or code.memory_mb,
        stdout_bytes=code.max_output_bytes,
        stderr_bytes=code.max_stderr_bytes,
        processes=code.processes,
    )


def _hidden_summary(verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    if not verdicts:
        return {}
    counts: dict[str, int] = {}
    for entry in verdicts:
        counts[entry["verdict"]] = counts.get(entry["verdict"], 0) + 1
    passed = counts.get(PASSED, 0)
    return {"hidden": {"total": len(verdicts), "passed": passed, "verdicts": counts}}


# Seconds a code item may spend, once it holds a slot, beyond its compile and per-test limits.
_SLOT_MARGIN_S = 10.0


class CodeScorer(Scorer[CodeOptions]):
    name: ClassVar[str] = "code"
    description: ClassVar[str] = "Run the program in a sandbox against stdin/stdout, call or assert tests."
    Options: ClassVar[type[TaskOptions]] = CodeOptions
    Fields = CodeFields
    item_fields: ClassVar[tuple[str, ...]] = ("response",)
    runs_in = "thread"
    baselines: ClassVar[tuple[str, ...]] = ("code-stdout",)  # `assay bench` runs it beside the task
    # the engine hands out sandbox slots fairly (assay.engine.scheduling)
    gate: ClassVar[str | None] = "sandbox"
    work: ClassVar[str] = "code"
    tools: ClassVar[Mapping[str, str]] = {"run_tests": "assay.verifiers.code.tool:RunTestsTool"}
    validation: ClassVar[Validation] = CodeValidation()
    audit: ClassVar[Audit] = CodeAudit()
    equivalence: ClassVar[Equivalence] = CodeEquivalence()  # answer clusters (equivalence.py)

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._executor: Executor | None = None
        self._holds: frozenset[str] | None = None
        self._lock = threading.Lock()
        self._digest_key = os.urandom(16)  # keys `outputs_digest`: see equivalence.py

    @property
    def executor(self) -> Executor:
        """The sandbox pool, started on first use (slots themselves start lazily too)."""
        with self._lock:
            if self._executor is None:
                self._executor = create_executor(self.settings.code)
            return self._executor

    def runtime_holds(self) -> frozenset[str]:
        """The distributions of the Python prefix sandboxed programs import from (read once)."""
        with self._lock:
            if self._holds is None:
                try:
                    self._holds = frozenset(prefix_packages(check_prefix(self.settings.code.python_prefix)))
                except ValueError:  # a prefix that is not a directory: the executor refuses it too
                    self._holds = frozenset()
            return self._holds

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: CodeOptions) -> float:
        limits = per_test_limits(settings.code, options)
        fields = CodeFields.of(item)
        tests = len(fields.tests or ()) + len(fields.hidden_tests or ())
        compile_s = settings.code.compile_timeout_s * 2 + 5
        # The engine starts this deadline once the item holds a sandbox slot (its wait is bounded
        # apart, by code.wait_s); the margin covers replacing a recycled slot.
        return _SLOT_MARGIN_S + compile_s + tests * (limits.wall + 0.5)

    def score(self, item: Item, options: CodeOptions) -> Result:
        fields = CodeFields.of(item)
        language = lookup(fields.language)
        if language is None:
            return Result.invalid(f'unknown language "{fields.language}" ({", ".join(language_names())})')
        if not language.available():
            return Result.error(f"language {language.name} is not installed on this server")
        hidden = fields.hidden_tests or []
        if not fields.tests and not hidden:
            return Result.invalid("code items need a non-empty list of tests")
        count = len(fields.tests or ()) + len(hidden)
        if count > self.settings.code.max_tests:
            return Result.invalid(f"{count} tests; at most {self.settings.code.max_tests}")
        try:
            plan = parse_tests(fields.tests or [], language)
        except (ValueError, TypeError) as exc:
            return Result.invalid(str(exc))
        if hidden:
            try:
                plan.hide(parse_tests(hidden, language))
            except (ValueError, TypeError) as exc:
                return Result.invalid(f"hidden_tests: {exc}")
        source = extract_code(item.response or "", language, plan.entry_points)
        if source is None or not source.strip():
            return Result.verdict(False, f"no {language.name} code found in the response")
        plan.resolve(source)
        result = self._run(language, source, plan, options)
        if result.status == "ok" and hardcoded_visible_outputs(source, fields.tests or [], result.details):
            return tabled(result, flag_only=options.lookup_tables == "flag")
        return result

    def run_program(self, program: Program) -> Execution:
        """Compile and run one program on one input under wall-clock limits (SandboxFusion's `/run_code`).

        CPU time is bounded by the same number: one thread cannot use more CPU than wall time. The caller
        holds a sandbox slot at the engine's gate (`Engine.run_program`). Raises `SandboxError` when a
        slot fails or the language is unknown here.
        """
        language = lookup(program.language)
        if language is None:
            raise SandboxError(f'unknown language "{program.language}" ({", ".join(language_names())})')
        code = self.settings.code
        limits = dataclasses.replace(
            per_test_limits(code, CodeOptions(), program.wall_s),
            memory_mb=program.memory_mb or code.memory_mb,
        )
        compile_limits = None
        if program.compile_wall_s is not None:
            compile_limits = Limits(
                time_s=program.compile_wall_s,
                wall_s=program.compile_wall_s,
                memory_mb=code.compile_memory_mb,
                address_space=False,
                processes=code.processes,
            )
        return self.executor.execute(
            language, program.source, [TestInput(stdin=program.stdin)], limits, compile_limits=compile_limits
        )

    def _run(self, language: Language, source: str, plan: TestPlan, options: CodeOptions) -> Result:
        limits = per_test_limits(self.settings.code, options)
        verdicts: list[dict[str, Any]] = []
        observed: list[Hashable | None] = []  # each test's output, for answer clusters

        def on_result(index: int, outcome: RunOutcome) -> bool:
            test = plan.inputs[index]
            verdict = verdict_of(outcome, test, plan.expected[index], options, limits.time_s)
            kind = plan.expected[index][0]
            returned = call_result(outcome) if kind == "json" and verdict == WRONG_ANSWER else None
            observed.append(observation(verdict, kind, outcome.stdout, returned, options.checker))
            entry = {"verdict": verdict, **outcome.details()}
            why = why_failed(outcome, test, verdict)
            stderr = outcome.stderr.decode("utf-8", "replace")
            if test.assert_code is not None:
                stderr += str(evaluator_verdict(outcome).get("error", ""))
            if verdict != PASSED and stderr:
                entry["stderr"] = stderr[-_STDERR_SHOWN:]
            if why:
                entry["why"] = why
            verdicts.append(entry)
            return verdict == PASSED or not options.stop_on_first_failure

        try:
            execution = self.executor.execute(language, source, plan.inputs, limits, on_result)
        except SandboxError as exc:
            return Result.error(f"sandbox failure: {exc}")
        details: dict[str, Any] = {"language": language.name}
        if plan.warnings:
            details["warnings"] = plan.warnings
        total = len(plan.inputs)
        visible = total if plan.visible is None else plan.visible
        if execution.compile_error is not None:
            details["compile_error"] = execution.compile_error[-2000:]
            verdicts = [{"verdict": COMPILE_ERROR}] * total
            details.update(tests=verdicts[:visible], **_hidden_summary(verdicts[visible:]))
            return Result.verdict(False, "compile error", extracted=source, details=details)
        passed = sum(v["verdict"] == PASSED for v in verdicts)
        verdicts += [{"verdict": "not_run"}] * (total - len(verdicts))
        correct = passed == total
        reward = float(correct) if options.scoring == "all" else passed / total
        first_bad = next((v["verdict"] for v in verdicts if v["verdict"] != PASSED), None)
        reason = f"{passed}/{total} tests passed" + (f" (first failure: {first_bad})" if first_bad else "")
        # Hidden tests: only how many passed and how they failed, never what they are or print.
        details.update(
            passed=passed, total=total, tests=verdicts[:visible], **_hidden_summary(verdicts[visible:])
        )
        if execution.cached_build:
            details["cached_build"] = True
        if (digest := outputs_digest(observed, total, self._digest_key)) is not None:
            details[DIGEST] = digest
        if language.name == "python" and (module := missing_module(details, self.runtime_holds())):
            details["missing_module"] = module  # a package the runtime lacks: on /metrics
            if lacking_runtime_package(module, self.runtime_holds()) is not None:  # ours, not the policy's
                return Result.error(missing_package_reason(module), details=details)
        return Result.partial(correct, reward, reason, extracted=source, details=details)

    @classmethod
    def runtime_info(cls, settings: Settings) -> dict[str, Any]:
        """What sandboxed programs get, per language: toolchain version and (Python) packages."""
        prefix = settings.code.python_prefix
        return {"languages": offered(str(prefix) if prefix is not None else None)}

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.pool.close()
                self._executor = None
