"""Tool-integrated RL on a CPU: the `assay train --demo tools` figures, against the no-tools baseline.

    .venv/bin/python benchmarks/multiturn.py [--seed 0] [--time-budget 240] [--out DIR]

Runs the tools demo once (SFT on tool-use traces, then GRPO with python sessions of an in-process Assay
service until the time budget) and prints greedy eval accuracy with tools at the start and the end of
RL, the same final model with its calls not run (the baseline: it must answer from what it wrote
itself), the gain over that baseline in the same run, RL steps, and wall time. Targets (issue 26):
`eval_end` >= 0.6, `eval_end - eval_no_tools` >= 0.4, whole run <= 300 s on this 2-core machine.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-budget", type=float, default=240.0, help="seconds; RL stops past it")
    parser.add_argument("--out", type=Path, default=None, help="run directory (default: a temporary one)")
    args = parser.parse_args()

    import torch

    from assay.rl_client.runs.demo_tools import ToolsDemoOptions, run_tools_demo

    torch.set_num_threads(1)  # on a busy 2-core machine 2 threads ran 10x slower
    options = ToolsDemoOptions(seed=args.seed, time_budget_s=args.time_budget, progress=False)
    with tempfile.TemporaryDirectory(prefix="assay-bench-multiturn-") as tmp:
        summary = run_tools_demo(args.out or Path(tmp), options)
    start, end, base = summary["eval_start"], summary["eval_end"], summary["eval_no_tools"]
    print(f"seed {summary['seed']}: {summary['sft_steps']} SFT steps, {summary['rl_steps']} RL steps")
    print(f"eval with tools, start of RL   {start:.2f}")
    print(f"eval with tools, end of RL     {end:.2f}")
    print(f"eval without tools (baseline)  {base:.2f}")
    print(f"gain over the baseline         {end - base:+.2f}  (RL's own gain {end - start:+.2f})")
    print(f"wall time                      {summary['seconds']:.0f} s")
    checks = [
        ("eval_end >= 0.6", end >= 0.6),
        ("eval_end - eval_no_tools >= 0.4", end - base >= 0.4),
        ("whole run <= 300 s", summary["seconds"] <= 300),
    ]
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}")


if __name__ == "__main__":
    main()
