"""Baseline verifiers that `assay bench` runs beside Assay, each as the wild calls it.

A baseline is a plain function `(item: dict) -> bool` (True: it accepts the response). Built-ins:

- `math-verify`: math-verify exactly as verl's `math_verify` reward calls it (`math_verify_verl`).
- `sql-set`: BIRD's evaluation, `set(fetchall())` equality of predicted and gold SQL, run on a
  read-write connection to a temporary copy of the database (BIRD opens databases read-write; the copy
  and a rolled-back transaction per item keep a destructive prediction from touching anything).
- `code-stdout`: runs the program on each stdin test in Assay's sandbox and passes when stdout equals
  the expected stdout exactly (no whitespace or token normalisation).

Any `module:function` with the same signature is a baseline too. A baseline that raises is recorded as
an `error` for that item by the runner, never skipped.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.registry import load_object
from assay.verifiers.sql import catalog

Baseline = Callable[[dict[str, Any]], bool]


# -- math: math-verify as verl calls it -----------------------------------------------------------
@cache
def _verl_metric() -> Callable[[list[str], list[str]], tuple[float, Any]]:
    from math_verify.metric import math_metric
    from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig

    return math_metric(
        gold_extraction_target=(LatexExtractionConfig(),),
        pred_extraction_target=(ExprExtractionConfig(), LatexExtractionConfig()),
    )


def _verl_metric_without_alarm(gold: str, response: str) -> float:
    """verl's `math_metric` call with math-verify's SIGALRM timeouts off (for threads).

    Same extraction targets, the same "no gold -> ValueError" rule, the same precision (6) and the same
    max-over-predictions aggregation as `math_metric`; only the signal-based deadlines are gone, so the
    caller must bound the time itself (run it in a process it can kill).
    """
    from math_verify.grader import verify
    from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig, parse

    golds = parse(gold, (LatexExtractionConfig(),), parsing_timeout=None)
    preds = parse(
        response,
        (ExprExtractionConfig(), LatexExtractionConfig()),
        parsing_timeout=None,
    )
    if not golds:
        raise ValueError(f"No gold targets found for at least one gold. Gold: {[gold]}")
    return 1.0 if any(verify(golds, pred, 6, timeout_seconds=None) for pred in [preds]) else 0.0


def math_verify_verl(response: str, reference: str) -> bool:
    """True when math-verify accepts `response` for gold `reference`, exactly as verl scores it.

    verl (`verl/utils/reward_score/math_verify.py`) wraps the gold in `\\boxed{}`, calls
    `math_metric(gold=(Latex,), pred=(Expr, Latex))` and turns every exception (a gold that does not
    parse, a math-verify timeout) into 0. We keep that: a baseline must show the false negatives its
    users really get.

    math-verify's own timeouts use SIGALRM, which only works in the main thread (its issues #11, #50,
    #55). In the main thread we call `math_metric` unchanged, timeouts included (what verl does). In any
    other thread a signal cannot be set, and verl's `except Exception` would silently turn every item
    into a 0; there we run the same computation with math-verify's timeouts disabled instead, so the
    caller must bound the time (a killable process).
    """
    gold = "\\boxed{" + reference + "}"
    try:
        if threading.current_thread() is threading.main_thread():
            score, _ = _verl_metric()([gold], [response])
        else:
            score = _verl_metric_without_alarm(gold, response)
    except Exception:  # verl: `except Exception: pass` (and a timeout scores timeout_score = 0)
        return False
    return bool(score == 1.0)


def math_verify_baseline(item: Mapping[str, Any]) -> bool:
    """The `math-verify` baseline over an item: its response against its reference."""
    return math_verify_verl(_text(item, "response"), _text(item, "reference"))


def _text(item: Mapping[str, Any], field: str) -> str:
    value = item.get(field)
    if not isinstance(value, str):
        raise ValueError(f'the item has no "{field}" text')
    return value


# -- sql: BIRD's set comparison ---------------------------------------------------------------------
class BirdSetBaseline:
    """BIRD's `execute_sql`: both queries on one read-write connection, `set(fetchall())` equality.

    BIRD opens the real file read-write. We open a temporary copy (made once per database), and run each
    item inside a transaction that is rolled back afterwards, so one item's DROP or DELETE neither
    reaches the user's file nor changes what later items see (in BIRD it would: its numbers then depend
    on item order). BIRD's `func_timeout` cannot stop a running SQLite query (it kept a core busy); our bound
    is SQLite's progress handler, which interrupts a query after `query_timeout_s` (by default Assay's own
    per-query limit, so both get the same budget) and makes the baseline answer `timeout`.
    The predicted SQL is found with Assay's own extractor, so both sides compare the same statement.
    """

    def __init__(self, databases: Path | None, query_timeout_s: float = 30.0) -> None:
        self.databases = databases
        self.query_timeout_s = query_timeout_s
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._copies: dict[str, Path] = {}

    def _copy(self, db_id: str) -> Path:
        if db_id not in self._copies:
            entries = catalog.scan(self.databases, {})  # the server's own lookup: flat or BIRD layout
            source = catalog.resolve(entries, db_id, "sqlite", alternates=False)[0].location
            if self._tmp is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="assay-bench-sql-")
            target = Path(self._tmp.name) / f"{db_id}.sqlite"
            shutil.copyfile(source, target)
            self._copies[db_id] = target
        return self._copies[db_id]

    def __call__(self, item: Mapping[str, Any]) -> bool:
        from assay.verifiers.sql.statement import extract_sql

        predicted = extract_sql(_text(item, "response"))
        if predicted is None:
            return False  # nothing to execute: BIRD would fail the sample
        conn = sqlite3.connect(self._copy(_text(item, "db_id")), isolation_level=None)
        stop_at = time.monotonic() + self.query_timeout_s
        conn.set_progress_handler(lambda: int(time.monotonic() > stop_at), 10_000)
        try:
            conn.execute("BEGIN")
            return self._compare(conn, predicted, _text(item, "reference"), stop_at)
        finally:
            if conn.in_transaction:
                conn.rollback()
            conn.close()

    def _compare(self, conn: sqlite3.Connection, predicted: str, gold: str, stop_at: float) -> bool:
        cursor = conn.cursor()
        try:
            cursor.execute(predicted)
            predicted_rows = cursor.fetchall()
        except sqlite3.Error as exc:
            if time.monotonic() > stop_at:
                raise TimeoutError(f"query ran past {self.query_timeout_s:g}s") from exc
            return False  # BIRD: a prediction that fails to run scores 0
        cursor.execute(gold)  # a gold that fails is the item's problem: an error, not a verdict
        gold_rows = cursor.fetchall()
        return set(predicted_rows) == set(gold_rows)

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
            self._copies.clear()


# -- code: exact stdout -------------------------------------------------------------------------------
Runner = Callable[[str, str, bytes], bytes]  # (language, program, stdin) -> stdout


class StdoutBaseline:
    """Passes when the program's stdout equals each test's expected stdout exactly (byte for byte).

    The naive harness many RL repositories use. Only stdin/stdout tests can be checked this way: an item
    with a function-call or assert test makes the baseline raise (an `error`), not a guessed verdict.
    Programs run through `runner`; by default Assay's sandbox, started on first use.
    """

    def __init__(self, runner: Runner | None = None, code_settings: Any = None) -> None:
        self._runner = runner
        self._code_settings = code_settings
        self._executor: Any = None

    def _sandbox_run(self, language: str, program: str, stdin: bytes) -> bytes:
        from assay.sandbox import Limits, TestInput, create_executor, lookup

        lang = lookup(language)
        if lang is None:
            raise ValueError(f'unknown language "{language}"')
        if self._executor is None:
            from assay.settings import CodeSettings

            self._executor = create_executor(self._code_settings or CodeSettings())
        execution = self._executor.execute(lang, program, [TestInput(stdin=stdin)], Limits())
        if execution.compile_error is not None or not execution.runs:
            return b""
        stdout: bytes = execution.runs[0].stdout
        return stdout

    def __call__(self, item: Mapping[str, Any]) -> bool:
        from assay.sandbox import lookup
        from assay.verifiers.code.blocks import extract_code

        language = item.get("language") or "python"
        tests = item.get("tests") or []
        if not tests or any(not isinstance(t, Mapping) or set(t) != {"stdin", "stdout"} for t in tests):
            raise ValueError("the stdout baseline needs stdin/stdout tests only")
        lang = lookup(language)
        if lang is None:
            raise ValueError(f'unknown language "{language}"')
        program = extract_code(_text(item, "response"), lang)
        if program is None:
            return False
        run = self._runner or self._sandbox_run
        return all(run(language, program, t["stdin"].encode()) == t["stdout"].encode() for t in tests)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.pool.close()
            self._executor = None


# -- lookup -----------------------------------------------------------------------------------------
BUILTIN: dict[str, str] = {
    "math-verify": "math: math-verify as verl's math_verify reward calls it",
    "sql-set": "sql: BIRD's set(fetchall()) equality on a read-write copy of the database",
    "code-stdout": "code: exact match of stdout on stdin/stdout tests",
}


def load(name: str, settings: Any) -> Baseline:
    """A baseline by built-in name or `module:function`; ValueError says what is known."""
    if name == "math-verify":
        return math_verify_baseline
    if name == "sql-set":
        return BirdSetBaseline(settings.sql.databases, settings.sql.query_timeout_s)
    if name == "code-stdout":
        return StdoutBaseline(code_settings=settings.code)
    if ":" not in name:
        raise ValueError(f'unknown baseline "{name}": use one of {sorted(BUILTIN)} or "module:function"')
    try:
        func = load_object(name, "baseline")
    except ConfigError as exc:
        raise ValueError(str(exc)) from exc
    if not callable(func):
        raise ValueError(f'baseline "{name}" is not callable')
    return func


def close(baseline: Baseline) -> None:
    """Release what a baseline holds (database copies, sandboxes), if anything."""
    closer = getattr(baseline, "close", None)
    if callable(closer):
        closer()
