"""`assay repo-preflight TASKS.jsonl [--runs N] [--parallel N] [-o OUT]`: check a repository task set.

One JSON line per task (see `preflight.check_task`), a summary on stderr, exit status 1 when any task has
a problem. Settings come from ASSAY_* variables (ASSAY_REPOS, ASSAY_REPO__PYTHON_PREFIX, ...).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from assay.jsonl import read_lines
from assay.settings import Settings
from assay.verifiers.repo.preflight import preflight


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assay repo-preflight",
        description="Gold change rewarded, empty change not, no flaky test: for each repository task.",
    )
    parser.add_argument("tasks", type=Path, help="tasks as JSON Lines (repo items or SWE-bench rows)")
    parser.add_argument("--runs", type=int, default=2, help="runs of the gold change (flaky tests: 2+)")
    parser.add_argument("--parallel", type=int, default=2, help="tasks checked at once")
    parser.add_argument("-o", "--output", default="-", help="reports as JSON Lines (default: stdout)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.runs < 1 or args.parallel < 1:
        print("assay repo-preflight: --runs and --parallel must be at least 1", file=sys.stderr)
        return 2
    try:
        lines = list(read_lines(args.tasks.read_text().splitlines(), objects=True))
    except OSError as exc:
        print(f"assay repo-preflight: cannot read {args.tasks}: {exc}", file=sys.stderr)
        return 2
    problem = next((line.problem for line in lines if line.problem), None)
    if problem:
        print(f"assay repo-preflight: {args.tasks}: {problem}", file=sys.stderr)
        return 2
    tasks = [line.value for line in lines]
    reports = preflight(tasks, Settings(), runs=args.runs, parallel=args.parallel)
    text = "".join(json.dumps(report) + "\n" for report in reports)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    bad = [r for r in reports if not r["ok"]]
    print(f"repo-preflight: {len(reports) - len(bad)}/{len(reports)} tasks ok", file=sys.stderr)
    return 1 if bad else 0
