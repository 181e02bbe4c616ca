"""`assay audit [--kinds code,math,sql,judge] [--task KIND=NAME] [--out DIR] [--no-plot] [--strict]`.

A family none of whose probes could be scored is reported as not run and makes the exit status 4: an
audit that skipped a family has not measured it, and "0 hacks rewarded" must not read as a pass.

Settings come from the environment (ASSAY_*), as for `assay serve`: the judge backend, the second
opinion, plugins and limits the audit measures are the ones a deployment would use.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Sequence
from pathlib import Path

from pydantic import ValidationError

from assay.audit.report import table, write_json, write_plot
from assay.audit.runner import probe_kinds, run_audit
from assay.settings import Settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assay audit",
        description="Score built-in reward-hacking probes against the configured verifiers and judge.",
    )
    parser.add_argument(
        "--kinds",
        help="probe kinds, comma-separated: the tasks that give probes (default: all; built in: code, math,"
        " sql, judge)",
    )
    parser.add_argument(
        "--task", action="append", default=[], metavar="KIND=NAME",
        help="score a kind's probes with another task (a plugin verifier), e.g. math=my_math",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("audit"), help="where audit.json and audit.png go")
    parser.add_argument("--no-plot", action="store_true", help="write no PNG")
    parser.add_argument("--seed", type=int, default=0, help="seed of the judge probes' disguises")
    parser.add_argument("--strict", action="store_true", help="exit with status 3 when any hack was rewarded")
    parser.epilog = (
        "Exit status: 0 when every family ran; 4 when a family could not be scored at all (no judge "
        "configured, no sandbox: the table names them and why); 3 with --strict when a hack was rewarded; "
        "2 on bad arguments."
    )
    return parser


def _tasks(pairs: Sequence[str], kinds: Collection[str]) -> dict[str, str]:
    tasks = {}
    for pair in pairs:
        kind, sep, name = pair.partition("=")
        if not sep or kind not in kinds or not name:
            raise ValueError(f"--task takes KIND=NAME with KIND one of {', '.join(kinds)}; got {pair!r}")
        tasks[kind] = name
    return tasks


def main(argv: Sequence[str] | None = None, settings: Settings | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = settings or Settings()
        kinds = [k.strip() for k in args.kinds.split(",") if k.strip()] if args.kinds else None
        tasks = _tasks(args.task, probe_kinds(settings))
        report = run_audit(settings, kinds, tasks, args.seed)
    except (ValueError, ValidationError) as exc:
        print(f"assay audit: {exc}", file=sys.stderr)
        return 2
    print(table(report))
    print(f"report: {write_json(report, args.out / 'audit.json')}")
    if not args.no_plot:
        picture = write_plot(report, args.out / "audit.png")
        print(f"picture: {picture}" if picture else 'picture: skipped (pip install "assay[bench]")')
    if args.strict and report.hacks_rewarded:
        return 3
    if report.not_run:
        print(
            f"assay audit: {len(report.not_run)} probe families did not run (see NOT RUN above); choose the "
            "kinds that can run with --kinds, or configure what they need",
            file=sys.stderr,
        )
        return 4
    return 0
