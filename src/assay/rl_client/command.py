"""`assay train`: the command line of the client trainer (dispatched from `assay.cli`).

assay train --init DIR                      write a runnable example (config, data, tiny model)
assay train --config DIR/run.yaml [--set train.steps=20 ...]
assay train --demo --out DIR                SFT + GRPO on 2-digit addition, nothing to prepare
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assay train", description="GRPO/DAPO/STaR client trainer rewarded by an Assay service."
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--config", type=Path, help="a run config (YAML or TOML)")
    mode.add_argument("--init", type=Path, metavar="DIR", help="write a runnable example into DIR")
    mode.add_argument("--demo", action="store_true", help="SFT + GRPO on 2-digit addition (CPU)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
        help="override a config field, e.g. --set train.generate.group_size=16 (repeatable)",
    )  # fmt: skip
    parser.add_argument("--check", action="store_true", help="validate the config and exit")
    parser.add_argument("--out", type=Path, help="--demo: directory for summary, log, curves")
    parser.add_argument("--server", help="--demo: Assay URL (default: start one in-process)")
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
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.config is not None:
        return _run_config(args)
    if not _has_torch():
        return 1
    if args.init is not None:
        from assay.rl_client.example import write_example

        made = write_example(args.init, seed=args.seed)
        print(json.dumps(made, indent=2))
        print(f"next: assay train --config {args.init / 'run.yaml'}", file=sys.stderr)
        return 0
    if args.out is None:
        parser.error("--demo needs --out DIR")
    return _run_demo(args)


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        print("assay train needs the train extra: pip install 'assay[train]'", file=sys.stderr)
        return False
    return True


def _run_config(args: argparse.Namespace) -> int:
    from assay.errors import ConfigError
    from assay.rl_client.data import DataError
    from assay.rl_client.run_config import load_config

    try:
        cfg, base = load_config(args.config, args.overrides)
    except ConfigError as exc:
        print(f"assay train: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print(cfg.model_dump_json(indent=2))
        return 0
    if not _has_torch():
        return 1
    from assay.rl_client.run import run

    try:
        summary = run(cfg, base, progress=not args.quiet)
    except (DataError, ConfigError, OSError) as exc:
        print(f"assay train: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2))
    return 0


def _run_demo(args: argparse.Namespace) -> int:
    import torch

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
