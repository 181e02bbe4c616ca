"""`assay bench`: run Assay and baselines on a labelled set and report FN/FP rates, latency, plots.

    assay bench FILE [--task math] [--baseline NAME ...] [--map field=column,...] [--out DIR]
    assay bench FILE --task math --disagreements --out DIR   # unlabelled data: rows to label

`main(argv)` is what `assay bench ...` dispatches to (and `python -m assay.bench`). Exit status 0 on a
finished run (without matplotlib: the tables, and a note that plots need `assay[bench]`), 2 on a usage
problem (unreadable file, unknown task or baseline), 1 when the report cannot be written.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.bench import baselines as baseline_lib
from assay.bench import disagree, metrics, report
from assay.bench.baselines import Baseline
from assay.bench.dataset import Row, load_bench, parse_mapping
from assay.bench.runner import ASSAY, Run, run_assay, run_baseline
from assay.cli_args import positive_int
from assay.cli_messages import os_error, settings_error
from assay.engine.scoring import Engine
from assay.errors import AssayError
from assay.registry import Registry
from assay.settings import Settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assay bench",
        description="Measure false-negative and false-positive rates of Assay and baselines on your data.",
        epilog="A timeout/error/invalid on an item labelled true counts as a false negative; "
        "see report.md's definitions. Built-in baselines: "
        + "; ".join(f"{k} ({v})" for k, v in baseline_lib.BUILTIN.items()),
    )
    parser.add_argument(
        "file", type=Path, help="JSONL, CSV, Parquet, .arrow, or a datasets save_to_disk folder"
    )
    parser.add_argument(
        "--task", help="task of the items (math, sql, code, or a plugin's); default: the one every row names"
    )
    parser.add_argument(
        "--baseline",
        action="append",
        metavar="NAME",
        help="built-in name or module:function (item dict -> bool); repeatable; default: the task's own",
    )
    parser.add_argument("--no-baselines", action="store_true", help="run Assay alone")
    parser.add_argument(
        "--map", action="append", default=[], metavar="FIELD=COLUMN,...", help="rename columns to item fields"
    )
    parser.add_argument("--out", type=Path, help="write report.json, report.md and plots here")
    parser.add_argument("--disagreements", action="store_true", help="list rows where verifiers disagree")
    parser.add_argument("--show", type=positive_int, default=20, help="disagreements printed in the terminal")
    parser.add_argument("--limit", type=positive_int, help="only the first N rows")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE:CLASS", help="extra task")
    parser.add_argument(
        "--workers", type=positive_int, help="Assay worker processes (default: ASSAY_WORKERS or CPUs)"
    )
    parser.add_argument(
        "--chunk",
        type=positive_int,
        help="items handed to Assay's engine at once (default: one per worker, so latency is service time)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    base = Settings()
    update: dict[str, Any] = {}
    if args.plugin:
        update["plugins"] = [*base.plugins, *args.plugin]
    if args.workers:
        update["workers"] = args.workers
    return Settings(**update) if update else base  # the environment still fills the rest


@contextlib.contextmanager
def _quiet_math_verify() -> Iterator[None]:
    """math-verify logs a warning per unparsable answer; hundreds of them would bury the table."""
    logger = logging.getLogger("math_verify")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _progress(enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return lambda name, total: tqdm(total=total, desc=name, file=sys.stderr, unit="item", leave=False)


def run_all(
    args: argparse.Namespace, settings: Settings, rows: Sequence[Row], loaded: dict[str, Baseline]
) -> list[Run]:
    """Assay first, then each baseline, on the same rows; the baselines are closed afterwards."""
    progress = _progress(not args.no_progress)
    runs = []
    try:
        with _quiet_math_verify():
            with Engine(settings) as engine:
                runs.append(run_assay(rows, engine, progress, chunk=args.chunk or settings.workers))
            for name, baseline in loaded.items():
                runs.append(run_baseline(name, baseline, rows, progress))
    finally:
        for baseline in loaded.values():
            baseline_lib.close(baseline)
    return runs


def build_report(args: argparse.Namespace, rows: Sequence[Row], runs: Sequence[Run]) -> dict[str, Any]:
    return {
        "file": str(args.file),
        "task": args.task,
        "items": len(rows),
        "labelled_true": sum(r.label is True for r in rows),
        "labelled_false": sum(r.label is False for r in rows),
        "unlabelled": sum(r.label is None for r in rows),
        "problems": [{"id": r.id, "index": r.index, "problem": r.problem} for r in rows if r.problem],
        "baselines": {
            run.verifier: baseline_lib.BUILTIN.get(run.verifier, "plugin")
            for run in runs
            if run.verifier != ASSAY
        },
        "definitions": metrics.DEFINITIONS,
        "verifiers": {run.verifier: metrics.summarise(rows, run) for run in runs},
    }


def _write_outputs(
    args: argparse.Namespace, data: dict[str, Any], rows: Sequence[Row], runs: Sequence[Run]
) -> None:
    from assay.bench import plots

    written = report.write(data, args.out)
    if not args.no_plots and not plots.available():
        print(f"assay bench: no plots: {plots.MISSING} (or pass --no-plots)", file=sys.stderr)
    elif not args.no_plots:
        latencies = {
            run.verifier: [o.elapsed_ms for r, o in zip(rows, run.outcomes, strict=True) if not r.problem]
            for run in runs
        }
        written.append(plots.category_rates(data, args.out / "fn_fp_by_category.png"))
        written.append(plots.latency(latencies, args.out / "latency.png"))
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)


def _disagreements(args: argparse.Namespace, rows: Sequence[Row], runs: Sequence[Run]) -> None:
    found = disagree.mine(rows, runs)
    print(f"\n{len(found)} of {len(rows)} rows have disagreeing verdicts (ranked; see disagree.py):")
    for record in found[: args.show]:
        info = record["disagreement"]
        verdicts = ", ".join(f"{k}={v}" for k, v in info["verdicts"].items())
        print(f"{info['rank']:>4}. {record['id']}  [{info['tier']}]  {verdicts}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / "disagreements.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for record in found:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        print(f"wrote {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = _settings(args)
        registry = Registry.from_settings(settings)
        given = args.task
        if given is not None:
            registry.lookup(given)  # a typo is caught before the file is read
        mapping = parse_mapping(args.map, registry.item_fields())
        args.task, rows = load_bench(args.file, given, mapping, registry)
        if given is None:
            registry.lookup(args.task)  # the task the rows name
        names = [] if args.no_baselines else (args.baseline or list(registry[args.task].baselines))
        loaded = {name: baseline_lib.load(name, settings) for name in names}
    except OSError as exc:
        print(f"assay bench: cannot read the bench set: {os_error(exc)}", file=sys.stderr)
        return 2
    except ValidationError as exc:  # before ValueError: pydantic's own text spans lines
        print(f"assay bench: {settings_error(exc)}", file=sys.stderr)
        return 2
    except (AssayError, ValueError) as exc:
        print(f"assay bench: {exc}", file=sys.stderr)
        return 2
    if args.limit is not None:
        rows = rows[: args.limit]
    for row in rows:
        if row.problem:
            print(f"assay bench: {row.id} (row {row.index}) cannot be scored: {row.problem}", file=sys.stderr)
    runs = run_all(args, settings, rows, loaded)
    data = build_report(args, rows, runs)
    print(report.plain_table(report.table_rows(data)))
    try:
        if args.out is not None:
            _write_outputs(args, data, rows, runs)
        if args.disagreements:
            _disagreements(args, rows, runs)
    except OSError as exc:
        print(f"assay bench: cannot write the report: {os_error(exc)}", file=sys.stderr)
        return 1
    return 0
