"""`assay train`: the command line of the client trainer (dispatched from `assay.cli`).

assay train --init DIR                      write a runnable example (config, data, tiny model)
assay train --init DIR --tools              the same, a tool-use run (train.tools, python sessions)
assay train --config DIR/run.yaml [--set train.steps=20 ...]
assay train --demo --out DIR                SFT + GRPO on 2-digit addition, nothing to prepare
assay train --demo --out DIR --set algorithm.shaping.method=shorter_better   the same, length-shaped
assay train --demo tools --out DIR          SFT + GRPO with the python tool on 3-digit multiplication

An output directory that holds a finished run is refused; `--fresh` starts anew there. An unfinished
`--config` run with a checkpoint is resumed, with a notice (`runs/rundir.py`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.rl_client.config import ShapingConfig


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assay train", description="GRPO/DAPO/STaR client trainer rewarded by an Assay service."
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--config", type=Path, help="a run config (YAML or TOML)")
    mode.add_argument("--init", type=Path, metavar="DIR", help="write a runnable example into DIR")
    mode.add_argument(
        "--demo", nargs="?", const="add", choices=["add", "tools"],
        help="SFT + GRPO on 2-digit addition (CPU); `--demo tools`: multi-turn with the python tool",
    )  # fmt: skip
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
        help="override a config field, e.g. --set train.generate.group_size=16 (repeatable); --demo takes "
        "algorithm.shaping.FIELD only, e.g. --set algorithm.shaping.method=shorter_better",
    )  # fmt: skip
    parser.add_argument("--check", action="store_true", help="validate the config and exit")
    parser.add_argument(
        "--fresh", action="store_true",
        help="start anew in an output directory that holds a run (its summary, log, curves and "
        "checkpoints are removed). Without it a finished run there is refused, and an unfinished "
        "--config run is resumed from its newest checkpoint, with a notice",
    )  # fmt: skip
    parser.add_argument(
        "--tools", action="store_true",
        help="with --init: write the tool-use example (3-digit multiplication with the python tool)",
    )  # fmt: skip
    run = parser.add_argument_group(
        "run flags",
        "--demo's settings (default shown; --demo tools takes --seed, --steps (default 20), --time-budget, "
        "--threads, --out and --server). With --config each sets the config field named in brackets, "
        "as --set would (a --set of the same field wins); --init reads --seed only.",
    )
    for flags, field, kind, default, text in _RUN_FLAGS:
        name = flags[-1].lstrip("-").replace("-", "_")
        if kind is bool:
            run.add_argument(*flags, dest=name, action="store_const", const=True, help=f"{text} [{field}]")
        else:
            shown = f"{text}{'' if default is None else f' (default {default})'} [{field}]"
            run.add_argument(*flags, dest=name, type=kind, default=None, help=shown, **_choices(name))
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return parser


# (flags, config field they set with --config, type, --demo's default, help). `--no-dynamic-sampling`
# sets its field to false. These used to apply to --demo only, silently ignored with --config (issue 31).
_RUN_FLAGS: list[tuple[tuple[str, ...], str, Any, Any, str]] = [
    (("--seed",), "train.seed", int, 0, "random seed"),
    (("--steps",), "train.steps", int, 180, "RL steps"),
    (("--lr",), "train.lr", float, 3e-4, "RL learning rate (1e-4..3e-4 works)"),
    (("--group-size",), "train.generate.group_size", int, 8, "responses per prompt"),
    (("--prompts-per-step",), "train.control.prompts_per_step", int, 32, "prompts per RL step"),
    (("--no-dynamic-sampling",), "train.control.dynamic_sampling", bool, False, "keep zero-variance groups"),
    (("--aggregation",), "train.loss.aggregation", str, "token", "loss aggregation"),
    (("--rollout",), "train.rollout", str, "group", "group: i.i.d. responses; tree: a tree sharing prefixes"),
    (("--time-budget",), "time_budget_s", float, 480.0, "safety stop, seconds (summary: stopped_by)"),
    (("--threads",), "threads", int, 1, "torch threads (on a busy 2-core machine 2 ran 10x slower)"),
    (("--out",), "output.dir", Path, None, "directory for summary, log, curves (from the current directory)"),
    (("--server",), "reward.url", str, None, "Assay URL (default: start one in-process)"),
]


def _choices(name: str) -> dict[str, Any]:
    choices = {"aggregation": ("token", "sequence", "dr_grpo"), "rollout": ("group", "tree")}
    return {"choices": choices[name]} if name in choices else {}


def _flag_overrides(args: argparse.Namespace) -> list[str]:
    """The run flags given on the command line, as `--set FIELD=VALUE` assignments for a config."""
    overrides = []
    for flags, field, kind, _, _ in _RUN_FLAGS:
        value = getattr(args, flags[-1].lstrip("-").replace("-", "_"))
        if value is not None:
            overrides.append(
                f"{field}={'false' if kind is bool else json.dumps(str(value) if kind is Path else value)}"
            )
    return overrides


def _demo_defaults(args: argparse.Namespace) -> None:
    """Fill the run flags not given with --demo's defaults."""
    for flags, _, kind, default, _ in _RUN_FLAGS:
        name = flags[-1].lstrip("-").replace("-", "_")
        if getattr(args, name) is None:
            setattr(args, name, False if kind is bool else default)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.config is not None:
        args.overrides = [*_flag_overrides(args), *args.overrides]
        return _run_config(args)
    if not _has_torch():
        return 1
    tools_budget: dict[str, Any] = {}
    if args.demo == "tools":
        tools_budget = _tools_budget(parser, args)
    _demo_defaults(args)
    if args.init is not None:
        from assay.rl_client.runs.example import write_example
        from assay.rl_client.runs.example_tools import write_tools_example

        made = (write_tools_example if args.tools else write_example)(args.init, seed=args.seed)
        print(json.dumps(made, indent=2))
        print(f"next: assay train --config {args.init / 'run.yaml'}", file=sys.stderr)
        return 0
    if args.out is None:
        parser.error("--demo needs --out DIR")
    return _run_demo(args, tools_budget)


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        print("assay train needs the train extra: pip install 'assay[train]'", file=sys.stderr)
        return False
    return True


def _run_config(args: argparse.Namespace) -> int:
    from assay.errors import ConfigError
    from assay.rl_client.runs.config import load_config
    from assay.rl_client.runs.data import DataError
    from assay.rl_client.runs.rundir import FinishedRunError

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
    from assay.rl_client.runs.driver import run

    try:
        summary = run(cfg, base, progress=not args.quiet, fresh=args.fresh)
    except FinishedRunError as exc:
        print(f"assay train: {exc}", file=sys.stderr)
        return 2
    except (DataError, ConfigError, OSError) as exc:
        print(f"assay train: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2))
    return 0


def demo_shaping(overrides: list[str]) -> ShapingConfig:
    """The `ShapingConfig` of `--demo`'s `--set algorithm.shaping.FIELD=VALUE` (or `train.shaping.`), the
    one section --demo takes by --set; any other field is a ConfigError saying where it belongs."""
    from pydantic import TypeAdapter, ValidationError

    from assay.errors import ConfigError
    from assay.rl_client.config import ShapingConfig
    from assay.rl_client.runs.config import apply_override

    data: dict[str, Any] = {}
    for assignment in overrides:
        key, _, value = assignment.partition("=")
        prefix, dot, name = key.strip().partition(".shaping.")
        if not dot or prefix not in ("algorithm", "train") or "." in name:
            raise ConfigError(
                f"--demo takes --set algorithm.shaping.FIELD=VALUE only, not {key.strip()!r}: its other "
                "settings are the run flags; for the rest write a config (assay train --init DIR)"
            )
        apply_override(data, f"{name}={value}")
    try:
        return TypeAdapter(ShapingConfig).validate_python(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'shaping'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"--set algorithm.shaping: {problems}") from exc


def _run_demo(args: argparse.Namespace, tools_budget: dict[str, Any]) -> int:
    from assay.errors import ConfigError  # FinishedRunError among them

    try:
        if args.demo == "tools" and args.overrides:
            raise ConfigError("--demo tools takes no --set (its rollouts are verified by their sessions)")
        summary = _demo(args, tools_budget)
    except ConfigError as exc:
        print(f"assay train: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    return 0


# The run flags `--demo tools` takes; its own defaults (20 steps) apply to those not given.
_TOOLS_FLAGS = ("--out", "--seed", "--server", "--steps", "--threads", "--time-budget")


def _tools_budget(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """`--steps` and `--time-budget` as the tools demo's options, when given; any run flag it does not
    take is an error (it was ignored, silently)."""
    given = [f[-1] for f, *_ in _RUN_FLAGS if getattr(args, f[-1].lstrip("-").replace("-", "_")) is not None]
    other = [flag for flag in given if flag not in _TOOLS_FLAGS]
    if other:
        parser.error(f"--demo tools does not take {', '.join(other)} (it takes {', '.join(_TOOLS_FLAGS)})")
    budget = {"rl_steps": args.steps, "time_budget_s": args.time_budget}
    return {key: value for key, value in budget.items() if value is not None}


def _demo(args: argparse.Namespace, tools_budget: dict[str, Any]) -> dict[str, Any]:
    import torch

    torch.set_num_threads(args.threads)
    if args.demo == "tools":
        from assay.rl_client.runs.demo_tools import ToolsDemoOptions, run_tools_demo

        tools_options = ToolsDemoOptions(
            seed=args.seed, server=args.server, progress=not args.quiet, fresh=args.fresh, **tools_budget
        )
        return run_tools_demo(args.out, tools_options)

    from assay.rl_client.runs.demo import DemoOptions, run_demo

    options = DemoOptions(
        shaping=demo_shaping(args.overrides),
        seed=args.seed,
        steps=args.steps,
        lr=args.lr,
        group_size=args.group_size,
        prompts_per_step=args.prompts_per_step,
        dynamic_sampling=not args.no_dynamic_sampling,
        aggregation=args.aggregation,
        rollout=args.rollout,
        time_budget_s=args.time_budget,
        server=args.server,
        progress=not args.quiet,
        fresh=args.fresh,
    )
    return {k: v for k, v in run_demo(args.out, options).items() if k != "config"}
