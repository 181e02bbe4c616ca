"""Assay's `sql` verifier next to a BIRD-style checker, on tests/cases/sql.jsonl, in the same run.

    .venv/bin/python benchmarks/sql_exec.py [--rounds N] [--timeout S] [--no-gold-cache]

The BIRD-style checker is what most text-to-SQL RL code copies: open the SQLite file read-write, execute
the prediction and the gold, compare `set(fetchall())`, with a thread-based timeout (func_timeout) that
cannot stop a running query. It runs here on a COPY of the databases, in a helper process, so its
damage and its runaway threads stay contained: a copy changed by a case is counted and restored, and a
helper whose timed-out thread is still running one second later is counted as a runaway and killed.
Both checkers get the same extracted SQL and the same per-query timeout, on one core each.

Prints pairs/s, agreement with the labels (equivalent/mismatch/alternate cases, and all cases), the
number of dangerous cases that changed a database, and runaway queries.
Targets (issue 5): >= 99% agreement, zero database changes, no runaway query alive past its deadline.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import shutil
import sqlite3
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from assay.settings import Settings, SqlSettings
from assay.types import Item, Status
from assay.verifiers.sql import SqlScorer, devdata
from assay.verifiers.sql.statement import extract_sql

CASES = Path(__file__).resolve().parents[1] / "tests" / "cases" / "sql.jsonl"


def bird_style(db: str, pred: str, gold: str) -> bool:
    """The checker as commonly copied: read-write connection, set comparison."""
    conn = sqlite3.connect(db)
    try:
        cursor = conn.cursor()
        cursor.execute(pred)
        predicted = cursor.fetchall()
        cursor.execute(gold)
        return set(predicted) == set(cursor.fetchall())
    finally:
        conn.commit()  # what a read-write connection does with the prediction's writes on a clean exit
        conn.close()


def _helper(conn: Connection, timeout_s: float) -> None:
    """Runs BIRD-style checks one by one with a func_timeout-like thread join."""
    # The cases' ATTACH and VACUUM INTO write under /tmp/assay_sql_danger*; run_bird removes them.
    while True:
        job = conn.recv()
        if job is None:
            return
        outcome: dict[str, Any] = {}

        def work(job: tuple[str, str, str] = job, outcome: dict[str, Any] = outcome) -> None:
            try:
                outcome["ok"] = bird_style(*job)
            except Exception:  # BIRD scores any exception as 0
                outcome["ok"] = False

        thread = threading.Thread(target=work, daemon=True)
        started = time.perf_counter()
        thread.start()
        thread.join(timeout_s)
        seconds = time.perf_counter() - started  # the checker's own time, without this bench's IPC
        if not thread.is_alive():
            conn.send({"ok": outcome.get("ok", False), "runaway": False, "seconds": seconds})
            continue
        thread.join(1.0)  # still running a second after its "timeout"?
        conn.send({"ok": False, "runaway": thread.is_alive(), "seconds": seconds})


class BirdRunner:
    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._start()

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.proc = context.Process(target=_helper, args=(child, self.timeout_s), daemon=True)
        self.proc.start()

    def check(self, db: str, pred: str, gold: str) -> dict[str, Any]:
        self.conn.send((db, pred, gold))
        answer: dict[str, Any] = self.conn.recv()
        if answer["runaway"]:  # contain it: a runaway thread would burn a core for the rest of the run
            self.proc.kill()
            self.proc.join()
            self._start()
        return answer

    def close(self) -> None:
        self.conn.send(None)
        self.proc.join(5)


def digest(directory: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


class Tally:
    """Verdicts of the first round, and seconds spent on safe (non-dangerous) cases over all rounds."""

    def __init__(self) -> None:
        self.verdicts: list[bool] = []
        self.safe_s = 0.0
        self.safe_pairs = 0
        self.changed = 0
        self.runaway = 0

    def add(self, case: dict[str, Any], round_index: int, verdict: bool, seconds: float) -> None:
        if round_index == 0:
            self.verdicts.append(verdict)
        if case["category"] != "danger":
            self.safe_s += seconds
            self.safe_pairs += 1


def run_assay(scorer: SqlScorer, cases: list[dict[str, Any]], rounds: int, deadline_s: float) -> Tally:
    tally = Tally()
    for round_index in range(rounds):
        for case in cases:
            item = Item(**{k: v for k, v in case.items() if k not in {"label", "category", "note"}})
            started = time.perf_counter()
            result = scorer.score(item, scorer.parse_options(item.options))
            seconds = time.perf_counter() - started
            tally.add(case, round_index, result.status is Status.OK and bool(result.correct), seconds)
            tally.runaway += round_index == 0 and seconds > deadline_s  # a query the engine failed to stop
    return tally


def run_bird(cases: list[dict[str, Any]], pristine: Path, copy: Path, timeout_s: float, rounds: int) -> Tally:
    runner = BirdRunner(timeout_s)
    tally = Tally()
    clean = digest(pristine)
    try:
        for round_index in range(rounds):
            for case in cases:
                pred = extract_sql(case["response"]) or ""
                answer = runner.check(str(copy / f"{case['db_id']}.sqlite"), pred, case["reference"])
                tally.add(case, round_index, answer["ok"], answer["seconds"])
                tally.runaway += round_index == 0 and answer["runaway"]
                # Count the damage (a changed copy, or a file ATTACH / VACUUM INTO wrote), then undo it.
                escaped = list(Path("/tmp").glob("assay_sql_danger*"))
                if digest(copy) != clean or escaped:
                    tally.changed += round_index == 0
                    shutil.rmtree(copy)
                    shutil.copytree(pristine, copy)
                    for path in escaped:
                        shutil.rmtree(path) if path.is_dir() else path.unlink()
    finally:
        runner.close()
    return tally


def agreement(verdicts: list[bool], cases: list[dict[str, Any]], danger: bool) -> float:
    pairs = [(v, c) for v, c in zip(verdicts, cases, strict=True) if danger or c["category"] != "danger"]
    return sum(v == c["label"] for v, c in pairs) / len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="passes over the cases (throughput)")
    parser.add_argument("--timeout", type=float, default=1.0, help="per-query timeout, both checkers")
    parser.add_argument("--no-gold-cache", action="store_true", help="run the gold query every time")
    args = parser.parse_args()
    cases = [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory(prefix="assay-sql-bench-") as tmp:
        pristine, copy, ours = Path(tmp, "pristine"), Path(tmp, "bird-copy"), Path(tmp, "assay")
        devdata.build(pristine, engines=("sqlite",))
        shutil.copytree(pristine, copy)
        shutil.copytree(pristine, ours)
        before = digest(ours)
        cache = 0 if args.no_gold_cache else 256
        sql = SqlSettings(
            databases=ours,
            query_timeout_s=args.timeout,
            deadline_s=4 * args.timeout + 1,
            gold_cache_size=cache,
        )
        scorer = SqlScorer(Settings(sql=sql))
        assay = run_assay(scorer, cases, args.rounds, sql.deadline_s)
        scorer.close()
        assay.changed = int(digest(ours) != before)
        bird = run_bird(cases, pristine, copy, args.timeout, args.rounds)
    danger = sum(c["category"] == "danger" for c in cases)
    print(f"{len(cases)} cases ({danger} dangerous) x {args.rounds} rounds, query timeout {args.timeout:g}s")
    print("pairs/s over the safe cases (dangerous ones are mostly timeouts); agreement with the labels")
    print(
        f"{'checker':<12}{'pairs/s':>10}{'agree eq/neq':>14}{'agree all':>11}{'db changed':>12}{'runaway':>9}"
    )
    for name, tally in (("assay", assay), ("bird-style", bird)):
        eq = agreement(tally.verdicts, cases, danger=False)
        full = agreement(tally.verdicts, cases, danger=True)
        rate = tally.safe_pairs / tally.safe_s
        changed = f"{tally.changed}/{danger}"
        print(f"{name:<12}{rate:>10.1f}{eq:>13.1%}{full:>11.1%}{changed:>12}{tally.runaway:>9}")
    ratio = (assay.safe_pairs / assay.safe_s) / (bird.safe_pairs / bird.safe_s)
    print(f"throughput ratio assay / bird-style: {ratio:.2f}x")
    wrong = [c["id"] for v, c in zip(assay.verdicts, cases, strict=True) if v != c["label"]]
    print(f"assay disagreements with the labels: {wrong or 'none'}")


if __name__ == "__main__":
    main()
