"""Rollout systems side by side (issue 41 item 5), one section per technique, selected with `--only`.

    .venv/bin/python benchmarks/rollouts.py [--only tree] [--steps 30] [--seeds 0] [--prompts 16]

Section `tree`: tree rollouts (`rollout: tree`, TreePO segments: 2 roots, fan-out 2, depth 3, 1-token
segments, TreeRL credit by default) against i.i.d. groups (`rollout: group`) at the same number of leaves
(`--group-size`, 8) on the demo task (2-digit addition, the 0.4M-parameter character GPT-2 of `assay train
--demo`). For each seed the model is trained by SFT to ~0.35 greedy dev accuracy once; both arms start from
copies of that model and the same sampler seed, run `--steps` RL steps against one in-process Assay service,
and report: response tokens generated per group (a tree's shared prefix counted once), RL wall time, and
greedy dev accuracy (500 problems) after the steps. Ratios are tree / i.i.d. in the same run. The RL
learning rate is 1.5e-4 for both arms: at the demo's 3e-4 neither arm gained in 30 steps from this start
(i.i.d. 0.438 -> 0.424). `--roots 8 --depth 1 --method treerpo` is a flat tree, i.e. GRPO through the tree
path: it matched the i.i.d. arm exactly (0.424 both), a check of the plumbing.

Targets (issue 41): >= 25% fewer tokens per group at equal leaf count; accuracy within 2 points or better.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable
from typing import Any

SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {}


def section(
    name: str,
) -> Callable[[Callable[[argparse.Namespace], None]], Callable[[argparse.Namespace], None]]:
    def register(run: Callable[[argparse.Namespace], None]) -> Callable[[argparse.Namespace], None]:
        SECTIONS[name] = run
        return run

    return register


def _train_arm(
    model: Any, rollout: str, args: argparse.Namespace, url: str, seed: int, dev: list[Any], train: list[Any]
) -> dict[str, float]:
    """`args.steps` RL steps from `model` (a copy is trained); tokens per group, RL seconds, dev accuracy."""
    import torch

    from assay.client import AssayClient
    from assay.rl_client.backends.hf import HFBackend
    from assay.rl_client.config import ControlConfig, GenerateConfig, TrainConfig, TreeConfig
    from assay.rl_client.filter import ServiceRewards
    from assay.rl_client.runs.demo import PAD, CharTokenizer, greedy_accuracy
    from assay.rl_client.trainer import Trainer

    model = copy.deepcopy(model)
    torch.manual_seed(seed)
    backend = HFBackend(model, CharTokenizer(), seed=seed)
    cfg = TrainConfig(
        steps=args.steps,
        lr=args.lr,
        seed=seed,
        generate=GenerateConfig(group_size=args.group_size, temperature=1.0, max_new_tokens=4),
        control=ControlConfig(prompts_per_step=args.prompts, oversample=2.0),
        rollout=rollout,  # type: ignore[arg-type]
        tree=TreeConfig(
            method=args.method,
            roots=args.roots,
            fan_out=args.fan_out,
            depth=args.depth,
            segment_tokens=args.segment,
            prune_duplicates=args.prune,
        ),
    )
    trainer = Trainer(
        model, backend, ServiceRewards(AssayClient(url, timeout_s=60.0)), train, cfg, pad_id=PAD
    )
    started = time.perf_counter()
    try:
        records = trainer.train()
    finally:
        trainer.close()
    seconds = time.perf_counter() - started
    tokens = sum(r["generated_tokens"] for r in records)
    groups = sum(r["generated_tokens"] / r["tokens_per_group"] for r in records if r["tokens_per_group"])
    return {
        "tokens_per_group": tokens / groups if groups else 0.0,
        "seconds": seconds,
        "accuracy": greedy_accuracy(backend, dev),
        "train_accuracy": statistics.fmean(r["accuracy"] for r in records),
    }


@section("tree")
def tree_section(args: argparse.Namespace) -> None:
    """Tree vs i.i.d. sampling at the same leaf count (see the module docstring)."""
    import torch

    from assay.rl_client.backends.hf import HFBackend
    from assay.rl_client.runs.demo import (
        CharTokenizer,
        addition_problems,
        build_model,
        greedy_accuracy,
        sft_until,
    )
    from assay.rl_client.runs.service import local_service
    from assay.settings import Settings

    torch.set_num_threads(1)
    rows = []
    with local_service(Settings(workers=1)) as url:
        for seed in args.seeds:
            tokenizer = CharTokenizer()
            train, dev = addition_problems(seed)
            model = build_model(tokenizer, seed)
            sft_until(HFBackend(model, tokenizer, seed=seed), tokenizer, train, dev, seed=seed)
            start = greedy_accuracy(HFBackend(model, tokenizer, seed=seed), dev)
            iid = _train_arm(model, "group", args, url, seed, dev, train)
            tree = _train_arm(model, "tree", args, url, seed, dev, train)
            rows.append((seed, start, iid, tree))
    shape = f"{args.group_size} leaves per prompt, {args.steps} RL steps, method {args.method}"
    print(f"\n## tree: tree vs i.i.d. at {shape}")
    print("| seed | start acc | i.i.d. tok/group | tree tok/group | tok ratio | i.i.d. RL s | tree RL s "
          "| time ratio | i.i.d. acc | tree acc | acc diff |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for seed, start, iid, tree in rows:
        print(
            f"| {seed} | {start:.3f} | {iid['tokens_per_group']:.1f} | {tree['tokens_per_group']:.1f} "
            f"| {tree['tokens_per_group'] / iid['tokens_per_group']:.2f} | {iid['seconds']:.1f} "
            f"| {tree['seconds']:.1f} | {tree['seconds'] / iid['seconds']:.2f} | {iid['accuracy']:.3f} "
            f"| {tree['accuracy']:.3f} | {100 * (tree['accuracy'] - iid['accuracy']):+.1f} pt |"
        )
    ratio = statistics.fmean(t["tokens_per_group"] / i["tokens_per_group"] for _, _, i, t in rows)
    diff = statistics.fmean(100 * (t["accuracy"] - i["accuracy"]) for _, _, i, t in rows)
    print(f"mean token ratio {ratio:.2f} ({100 * (1 - ratio):.0f}% fewer; target >= 25%), "
          f"mean accuracy difference {diff:+.1f} points (target >= -2)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", choices=sorted(SECTIONS), action="append", help="sections to run (default: all)"
    )
    parser.add_argument("--steps", type=int, default=30, help="tree: RL steps per arm")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="tree: one SFT start per seed")
    parser.add_argument("--prompts", type=int, default=16, help="tree: prompts per step")
    parser.add_argument("--group-size", type=int, default=8, help="tree: leaves (i.i.d. samples) per prompt")
    parser.add_argument(
        "--method", default="treerl", choices=["treerl", "treerpo", "treepo"], help="tree credit"
    )
    parser.add_argument("--lr", type=float, default=1.5e-4, help="tree: RL learning rate of both arms")
    parser.add_argument("--roots", type=int, default=2, help="tree: chains from the prompt")
    parser.add_argument("--fan-out", type=int, default=2, help="tree: children per fork")
    parser.add_argument("--depth", type=int, default=3, help="tree: levels that fork")
    parser.add_argument("--segment", type=int, default=1, help="tree: tokens per segment")
    parser.add_argument("--prune", action="store_true", help="tree: prune duplicate ended branches")
    args = parser.parse_args()
    for name in args.only or sorted(SECTIONS):
        SECTIONS[name](args)


if __name__ == "__main__":
    main()
