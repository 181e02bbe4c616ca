"""`assay validate`: check a task set before a run; optionally probe solve rates or gate proposals.

    assay validate TASKS.jsonl -o REPORT.jsonl                     # well-posedness + prompt checks
    assay validate TASKS.jsonl -o REPORT.jsonl --policy openai:http://127.0.0.1:8001 -k 8 \\
        --min-solve-rate 0.1 --max-solve-rate 0.9 --keep train.jsonl --out report/
    assay validate PROPOSALS.jsonl -o REPORT.jsonl --gate math --threshold 0.6 --keep kept.jsonl

REPORT.jsonl has one line per task: `id`, `valid`, `problems` (each `check`, `reason`, `severity`), and with
`--policy` also `solve_rate`, `samples`, `learning_value`. `--keep` writes the tasks that are valid (and
inside the solve-rate band), or the tasks a gate kept, each with what was learnt about it. `--out DIR`
writes report.md and, with `--policy`, solve_rates.png. Exit status 0 when the run finished (also with
invalid tasks, unless `--strict`), 1 with `--strict` and an invalid task, 2 on a usage problem.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from assay.cli_args import fraction, positive_int
from assay.cli_messages import os_error
from assay.errors import AssayError
from assay.jsonl import read_lines
from assay.settings import Settings
from assay.validate.report import BadRow, TaskReport


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assay validate",
        description="Check that every task is well posed before training; probe solve rates; gate proposals.",
    )
    parser.add_argument("file", help="tasks as JSON Lines (items without a response), or - for stdin")
    parser.add_argument("-o", "--output", default="-", help="report as JSON Lines (default: stdout)")
    parser.add_argument(
        "--repeats", type=positive_int, default=3, help="runs of a code reference (determinism)"
    )
    parser.add_argument("--task", help="task of rows that name none (e.g. repo for a SWE-bench file)")
    parser.add_argument("--no-near-duplicates", action="store_true", help="skip the MinHash prompt check")
    parser.add_argument("--policy", help="sample answers: openai:URL[#MODEL], hf:MODEL_DIR or vllm:MODEL")
    parser.add_argument("-k", "--samples", type=positive_int, default=8, help="answers per prompt (--policy)")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (--policy)")
    parser.add_argument("--max-tokens", type=positive_int, default=512, help="tokens per answer (--policy)")
    parser.add_argument("--min-solve-rate", type=fraction, help="keep prompts solved at least this often")
    parser.add_argument("--max-solve-rate", type=fraction, help="keep prompts solved at most this often")
    parser.add_argument("--gate", choices=_gated(), help="the file holds proposed tasks: gate them")
    parser.add_argument("--threshold", type=fraction, default=0.6, help="math gate: share that must agree")
    parser.add_argument("--keep", type=Path, help="write the tasks worth training on here (JSON Lines)")
    parser.add_argument("--out", type=Path, help="write report.md (and solve_rates.png) here")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any task is invalid")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return parser


def _read(path: str) -> list[Any]:
    """Rows of a JSON Lines file; a line that is not JSON becomes a BadRow (reported, never dropped)."""
    with ExitStack() as stack:
        stream = sys.stdin if path == "-" else stack.enter_context(open(path, encoding="utf-8"))
        return [
            BadRow(f"line-{line.number}", line.problem) if line.problem else line.value
            for line in read_lines(stream)
        ]


def _write_jsonl(path: str | Path, rows: Sequence[dict[str, Any]]) -> None:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if str(path) == "-":
        sys.stdout.write(text)
    else:
        Path(path).write_text(text, encoding="utf-8")


def summary(reports: Sequence[TaskReport]) -> str:
    valid = sum(r.valid for r in reports)
    checks = Counter(p.check for r in reports for p in r.problems)
    listed = ", ".join(f"{c}={n}" for c, n in checks.most_common()) or "none"
    return (
        f"validated {len(reports)} tasks: {valid} valid, {len(reports) - valid} invalid; problems: {listed}"
    )


def _validate(args: argparse.Namespace, rows: list[Any]) -> tuple[list[TaskReport], list[dict[str, Any]]]:
    from tqdm import tqdm

    from assay.engine.scoring import Engine
    from assay.validate import solve_rate
    from assay.validate.validator import validate

    with Engine(Settings()) as engine, tqdm(unit="probe", file=sys.stderr, disable=args.quiet) as bar:
        reports = validate(
            rows,
            engine,
            repeats=args.repeats,
            near_duplicates=_near_duplicates(args),
            progress=bar.update,
            task=args.task,
        )
        keep = [
            dict(row)
            for row, report in zip(rows, reports, strict=True)
            if report.valid and isinstance(row, dict)
        ]
        if args.policy:
            sampler = solve_rate.sampler_from_spec(
                args.policy, temperature=args.temperature, max_tokens=args.max_tokens
            )
            probed = [row for row, report in zip(rows, reports, strict=True) if report.valid]
            valid_reports = [r for r in reports if r.valid]
            rates = solve_rate.solve_rates(probed, sampler, engine, args.samples)
            keep = []
            for row, report, rate in zip(probed, valid_reports, rates, strict=True):
                report.solve_rate, report.samples = rate.rate, rate.samples
                report.learning_value = rate.learning_value
                if solve_rate.in_band(rate.rate, args.min_solve_rate, args.max_solve_rate):
                    keep.append({**row, "solve_rate": rate.rate, "learning_value": rate.learning_value})
    return reports, keep


def _near_duplicates(args: argparse.Namespace) -> bool:
    """Whether to run the MinHash check: asked for and installed. Without the `validate` extra the rest of
    the checks still run, with a one-line notice (the Quick start's install has no extras: issue 43)."""
    from assay.validate.prompts import near_duplicates_available

    if args.no_near_duplicates:
        return False
    if not near_duplicates_available():
        print(
            "assay validate: near-duplicate prompts not checked: it needs datasketch"
            " (pip install 'assay[validate]'); --no-near-duplicates silences this",
            file=sys.stderr,
        )
        return False
    return True


def _gated() -> list[str]:
    """The tasks whose `Validation` has a gate (assay.registry.gate), as `--gate` choices."""
    from assay.registry import Registry
    from assay.validate.gate import gated_tasks

    return gated_tasks(Registry.from_settings(Settings()))


def _gate(args: argparse.Namespace, rows: list[Any]) -> tuple[list[TaskReport], list[dict[str, Any]]]:
    from assay.validate.gate import gate

    proposals = [r if isinstance(r, dict) else {} for r in rows]
    outcome = gate(args.gate, proposals, Settings(), threshold=args.threshold, runs=max(2, args.repeats))
    return [report for report, _ in outcome], [task for _, task in outcome if task is not None]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.gate and args.policy:
        parser.error("--gate takes proposals with their own solutions; it does not sample (drop --policy)")
    if (args.min_solve_rate is not None or args.max_solve_rate is not None) and not args.policy:
        parser.error("--min-solve-rate/--max-solve-rate need --policy (the solve rates come from sampling)")
    try:
        rows = _read(args.file)
        reports, keep = _gate(args, rows) if args.gate else _validate(args, rows)
        _write_jsonl(args.output, [r.to_json() for r in reports])
        if args.keep is not None:
            _write_jsonl(args.keep, keep)
        if args.out is not None:
            from assay.validate import pictures

            pictures.write_report(args.out, reports)
    except OSError as exc:
        print(f"assay validate: {os_error(exc)}", file=sys.stderr)
        return 2
    except AssayError as exc:
        print(f"assay validate: {exc}", file=sys.stderr)
        return 2
    print(summary(reports) + (f"; kept {len(keep)}" if args.keep is not None else ""), file=sys.stderr)
    return 1 if args.strict and not all(r.valid for r in reports) else 0
