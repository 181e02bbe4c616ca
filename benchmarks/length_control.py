"""Length control side by side (issue 40 item 4): plain GRPO against ShorterBetter, S-GRPO, RoRecomp and
AdaptThink, each for the same steps from one verbose start, in one run on a CPU.

The start is `runs/think_demo.py`'s: the demo's 2-digit addition with a thinking block, SFT'd on targets
whose thinking is the work (units' sum, tens' sum with the carry) on sums whose units carry and 2-5
filler words on the others, 1 in 10 answering at once, to 0.3 greedy accuracy (128 dev prompts, checked
every 20 steps). Its solve rate on each prompt (8 samples) is pre-sampled once: the training prompts'
rates are AdaptThink's reference accuracies (a solve-rate file the local server reads), and the dev
prompts' split the dev set into an easy and a hard half (above and below the median rate). The dev set
is also split by construction: no carry (filler thinking) and carry (working thinking); the start's
greedy accuracy as it answers and forced to NoThinking is reported on each. Every run uses the trainer as
`assay train` does (`Trainer` against an in-process `assay serve`, group 8, no dynamic sampling, so
every run takes the same batches); only `algorithm.shaping` differs:

- none: plain GRPO on the verifier's 0/1;
- shorter_better: the released alpha 2, beta 0.001 (GRPO's std scaling makes the length term count within
  an all-correct group whatever beta is);
- s_grpo: exit cue `</think>` (this policy's way to stop thinking), 4 answer tokens, cuts inside the
  thinking only;
- ro_recomp: priority fraction 0.5, a compensation batch every 4th step;
- adapt_think: delta 0.05, half of each group forced to `</think>`, the released code's token-mean ratio.

Reported per run: greedy dev accuracy and mean greedy response length (tokens, end token included)
before and after, the mean sampled length over the last 5 steps, and the NoThinking rate (the
probability of opening with `</think>` at temperature 1, mean over prompts) on the easy and the hard
half, and on the no-carry and the carry prompts. `--docs` rewrites the table in docs/length-control.md
between its markers.

    PYTHONPATH=src python benchmarks/length_control.py --out /tmp/length-control --docs

The defaults (40 RL steps of 16 prompts a run at lr 2e-4, one seed) are the same for every arm (at lr 3e-4
plain GRPO drifted down over 30 steps; at 1e-4 no method but RoRecomp shortened in 30:
docs/length-control.md). One run on the shared 2-core machine took 3988 s, most of it under a load average of
10-65 (SFT 1458 s; an arm's 40 steps 17-1275 s as the load came and went). One seed and 500 dev prompts: two
runs' accuracies differ by about 3 points (one SE) from noise alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from assay.rl_client.config import ShapingConfig
from assay.rl_client.runs import summary as run_summary
from assay.rl_client.runs.service import local_service
from assay.rl_client.runs.think_demo import (
    VerboseRun,
    has_carry,
    measure,
    mode_accuracy,
    nothinking_rate,
    sft_verbose,
    solve_rates,
    train_verbose,
    verbose_config,
    write_solve_rates,
)
from assay.settings import Settings

METHODS = {
    "none": ShapingConfig(),
    "shorter_better": ShapingConfig(method="shorter_better"),
    "s_grpo": ShapingConfig(method="s_grpo", exit_cue="</think>", exit_tokens=4),
    "ro_recomp": ShapingConfig(method="ro_recomp"),
    "adapt_think": ShapingConfig(method="adapt_think"),
}
LABELS = {
    "none": "GRPO",
    "shorter_better": "ShorterBetter",
    "s_grpo": "S-GRPO",
    "ro_recomp": "RoRecomp",
    "adapt_think": "AdaptThink",
}
DOCS = Path(__file__).resolve().parents[1] / "docs" / "length-control.md"
START, END = "<!-- length_control:start -->", "<!-- length_control:end -->"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("length-control"))
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--prompts-per-step", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sft-target", type=float, default=0.3)
    parser.add_argument("--sft-lr", type=float, default=1e-3)
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--lr", type=float, default=2e-4, help="the RL learning rate of every run")
    parser.add_argument("--docs", action="store_true", help="rewrite the table in docs/length-control.md")
    parser.add_argument("--from-results", type=Path, help="only render (and --docs) a saved results.json")
    args = parser.parse_args()
    if args.from_results is not None:
        table = render(json.loads(args.from_results.read_text(encoding="utf-8")))
        print(table)
        if args.docs:
            _rewrite_docs(table)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    start = sft_verbose(args.seed, args.sft_target, lr=args.sft_lr, log=lambda line: print(line, flush=True))
    print(f"SFT: {start.sft_steps} steps, {time.perf_counter() - started:.0f} s", flush=True)
    rates_dir = args.out / "solve-rates"
    write_solve_rates(start, rates_dir)
    dev_rates = solve_rates(start, start.dev)
    ranked = sorted(start.dev, key=lambda p: (-dev_rates[p.id], p.id))
    easy, hard = ranked[: len(ranked) // 2], ranked[len(ranked) // 2 :]
    halves = {
        "easy": easy,
        "hard": hard,
        "no_carry": [p for p in start.dev if not has_carry(p)],
        "carry": [p for p in start.dev if has_carry(p)],
    }
    rows: dict[str, dict[str, Any]] = {}
    runs: dict[str, VerboseRun] = {}
    backend = _start_backend(start)
    before = measure(backend, start.dev)
    nothinking_before = {name: nothinking_rate(backend, half) for name, half in halves.items()}
    modes_before = {name: mode_accuracy(backend, halves[name]) for name in ("no_carry", "carry")}
    print(json.dumps({"nothinking_before": nothinking_before, "modes_before": modes_before}), flush=True)
    with local_service(Settings(workers=1, solve_rates=rates_dir)) as url:
        for method in args.methods:
            cfg = verbose_config(METHODS[method], args.steps, args.seed, args.prompts_per_step, args.lr)
            out = args.out / method
            out.mkdir(parents=True, exist_ok=True)
            run = train_verbose(start, cfg, url, out, before=before)
            runs[method] = run
            rows[method] = _row(run, halves)
            run_summary.plot_run(
                out, run.before.accuracy, run.history, len(run.history), run.after.accuracy,
                f"length control: {LABELS[method]} (seed {args.seed})",
            )  # fmt: skip
            print(json.dumps({"method": method, **rows[method]}), flush=True)
    report = {
        "seed": args.seed,
        "steps": args.steps,
        "prompts_per_step": args.prompts_per_step,
        "lr": args.lr,
        "sft_steps": start.sft_steps,
        "nothinking_before": nothinking_before,
        "modes_before": modes_before,
        "dev_easy_solve_rate": statistics.fmean(dev_rates[p.id] for p in easy),
        "dev_hard_solve_rate": statistics.fmean(dev_rates[p.id] for p in hard),
        "seconds": round(time.perf_counter() - started, 1),
        "runs": rows,
    }
    (args.out / "results.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    _plot(runs, args.out / "length-control.png")
    table = render(report)
    print(table)
    if args.docs:
        _rewrite_docs(table)


def _start_backend(start: Any) -> Any:
    from assay.rl_client.backends.hf import HFBackend

    return HFBackend(start.model(), start.tokenizer, seed=start.seed)


def _row(run: VerboseRun, halves: dict[str, list[Any]]) -> dict[str, Any]:
    tail = run.history[-5:]
    return {
        "before": asdict(run.before),
        "after": asdict(run.after),
        "sampled_length_last5": statistics.fmean(r["response_length"] for r in tail) if tail else None,
        **{f"nothinking_{name}": nothinking_rate(run.backend, half) for name, half in halves.items()},
        "accuracy_no_carry": _accuracy(run.backend, halves["no_carry"]),
        "accuracy_carry": _accuracy(run.backend, halves["carry"]),
        "rl_seconds": round(run.seconds, 1),
    }


def _accuracy(backend: Any, problems: list[Any]) -> float:
    from assay.rl_client.runs.think_demo import greedy_accuracy

    return greedy_accuracy(backend, problems)


def render(report: dict[str, Any]) -> str:
    """The markdown table: each method against plain GRPO's end point (a results.json written before the
    carry split renders without its columns)."""
    runs = report["runs"]
    base = runs.get("none")
    split = all("nothinking_carry" in row for row in runs.values())
    head = (
        "| run | greedy accuracy before → after | greedy length before → after (tokens) | length vs GRPO "
        "| accuracy vs GRPO (points) | NoThinking easy / hard half, after |"
    )
    lines = [
        head + (" NoThinking no-carry / carry, after | accuracy no-carry / carry, after |" if split else ""),
        "|---|---|---|---|---|---|" + ("---|---|" if split else ""),
    ]
    for method, row in runs.items():
        b, a = row["before"], row["after"]
        versus = accuracy = "—"
        if base is not None and method != "none":
            versus = f"{(a['length'] / base['after']['length'] - 1) * 100:+.0f}%"
            accuracy = f"{(a['accuracy'] - base['after']['accuracy']) * 100:+.1f}"
        line = (
            f"| {LABELS[method]} | {b['accuracy']:.3f} → {a['accuracy']:.3f} | {b['length']:.1f} → "
            f"{a['length']:.1f} | {versus} | {accuracy} | {row['nothinking_easy']:.2f} / "
            f"{row['nothinking_hard']:.2f} |"
        )
        if split:
            line += (
                f" {row['nothinking_no_carry']:.2f} / {row['nothinking_carry']:.2f} |"
                f" {row['accuracy_no_carry']:.3f} / {row['accuracy_carry']:.3f} |"
            )
        lines.append(line)
    before = report["nothinking_before"]
    lines.append("")
    lines.append(
        f"Seed {report['seed']}, {report['steps']} RL steps of {report['prompts_per_step']} prompts x 8 "
        f"each at lr {report.get('lr', 3e-4):g}, from one SFT start ({report['sft_steps']} steps; "
        f"NoThinking before: easy "
        f"{before['easy']:.2f}, hard {before['hard']:.2f}); {report['seconds']:.0f} s in all."
    )
    modes = report.get("modes_before")
    if modes:
        lines.append(
            "The start's greedy accuracy as it answers / forced to NoThinking: no-carry "
            f"{modes['no_carry']['free']:.3f} / {modes['no_carry']['nothinking']:.3f}, carry "
            f"{modes['carry']['free']:.3f} / {modes['carry']['nothinking']:.3f}; NoThinking rate before: "
            f"no-carry {before['no_carry']:.2f}, carry {before['carry']:.2f}."
        )
    return "\n".join(lines)


def _plot(runs: dict[str, VerboseRun], path: Path) -> None:
    """Sampled response length and sample accuracy per step, every method on one pair of axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for method, run in runs.items():
        steps = [r["step"] for r in run.history]
        axes[0].plot(steps, [r["response_length"] for r in run.history], label=LABELS[method])
        axes[1].plot(steps, [r.get("raw_reward", r["accuracy"]) for r in run.history], label=LABELS[method])
    axes[0].set_title("mean sampled response length (tokens)", fontsize=9)
    axes[1].set_title("sample accuracy", fontsize=9)
    for ax in axes:
        ax.set_xlabel("step", fontsize=8)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _rewrite_docs(table: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    if not rest:
        raise SystemExit(f"{DOCS} has no {START} ... {END} block to rewrite")
    DOCS.write_text(f"{head}{START}\n{table}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    main()
