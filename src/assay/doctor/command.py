"""`assay doctor RUN_DIR [--metrics-url URL] [--out DIR] [--no-plots] [--strict]`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import httpx

from assay.doctor.checks import diagnose
from assay.doctor.report import write_report
from assay.doctor.run import load_run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assay doctor", description="Diagnose RL failure modes from a run's step log and server metrics."
    )
    parser.add_argument("run_dir", type=Path, help="a run directory holding log.jsonl (assay train --out)")
    parser.add_argument("--metrics-url", help="the reward server's base URL: its /metrics is read too")
    parser.add_argument("--out", type=Path, help="where doctor.md and the plots go (default: RUN_DIR/doctor)")
    parser.add_argument("--no-plots", action="store_true", help="write the report without PNG plots")
    parser.add_argument("--strict", action="store_true", help="exit with status 3 when a mode is tripped")
    return parser


def _scrape(url: str) -> str:
    response = httpx.get(url.rstrip("/") + "/metrics", timeout=10.0)
    response.raise_for_status()
    return response.text


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        metrics = _scrape(args.metrics_url) if args.metrics_url else None
        run = load_run(args.run_dir, metrics)
    except httpx.HTTPError as exc:
        print(f"assay doctor: cannot read {args.metrics_url}/metrics: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"assay doctor: {exc}", file=sys.stderr)
        return 1
    findings = diagnose(run)
    path = write_report(run, findings, args.out or args.run_dir / "doctor", plots=not args.no_plots)
    for finding in findings:
        print(f"{finding.status:>8}  {finding.title}: {finding.evidence or '-'}")
    print(f"report: {path}")
    return 3 if args.strict and any(f.tripped for f in findings) else 0
