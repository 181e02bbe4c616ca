"""`assay train`: the command line of the client trainer (dispatched from `assay.cli`).

Only `--demo` runs from the command line for now: a real model needs a data set, a backend and a
reward task, which the Python API (`assay.rl_client.trainer.Trainer`) takes as objects.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assay train", description="GRPO/DAPO client trainer rewarded by an Assay service."
    )
    parser.add_argument("--demo", action="store_true", help="SFT + GRPO on 2-digit addition (CPU)")
    parser.add_argument("--out", type=Path, required=True, help="directory for summary, log, curves")
    parser.add_argument("--server", help="Assay URL (default: start one in-process)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--steps", type=int, default=200, help="most RL steps (default 200; --time-budget may end RL first)"
    )
    parser.add_argument("--lr", type=float, default=3e-4, help="RL learning rate (1e-4..3e-4 works)")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--prompts-per-step", type=int, default=32)
    parser.add_argument(
        "--no-dynamic-sampling", action="store_true", help="keep zero-variance groups (plain GRPO)"
    )
    parser.add_argument("--aggregation", choices=("token", "sequence", "dr_grpo"), default="token")
    parser.add_argument("--time-budget", type=float, default=165.0, help="seconds; RL stops past it")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: on a busy 2-core machine 2 threads ran 10x slower)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.demo:
        print(
            "assay train: only --demo runs from the command line; use assay.rl_client.trainer",
            file=sys.stderr,
        )
        return 2
    try:
        import torch
    except ImportError:
        print("assay train needs the train extra: pip install 'assay[train]'", file=sys.stderr)
        return 1
    torch.set_num_threads(args.threads)

    from assay.rl_client.demo import DemoOptions, run_demo

    options = DemoOptions(
        seed=args.seed,
        steps=args.steps,
        lr=args.lr,
        group_size=args.group_size,
        prompts_per_step=args.prompts_per_step,
        dynamic_sampling=not args.no_dynamic_sampling,
        aggregation=args.aggregation,
        time_budget_s=args.time_budget,
        server=args.server,
        progress=not args.quiet,
    )
    summary = run_demo(args.out, options)
    shown = {k: v for k, v in summary.items() if k != "config"}
    print(json.dumps(shown, indent=2))
    return 0
