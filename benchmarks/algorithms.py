"""STaR vs online RFT vs GRPO side by side (issue 42 item 5): the lecture's question, on the demo task.

    .venv/bin/python benchmarks/algorithms.py [--steps 60] [--prompts 16] [--seed 0] [--docs]

One run: `assay train --init`'s example (2-digit addition, the 0.4M-parameter character GPT-2 warmed up
by SFT to ~0.35 greedy accuracy) is written once; then `assay train --config` runs each algorithm from
that same model with the same seed, through the trainer's own driver (`runs/driver.run`, one switch:
`algorithm`). Same sample budget: GRPO and RFT take `--steps` steps of `--prompts` prompts x 8 samples with
dynamic sampling off (it would resample to refill the batch: more samples for the same step count); STaR
takes 4 iterations of (steps x prompts / 4) prompts x 8 samples, without rationalisation (its hinted
resampling would add samples). So each algorithm scores steps x prompts x 8 training samples.

Reported per algorithm, on the same held-out prompts (`--eval` of them): greedy accuracy before/after;
Pass@K and Maj@K (K = 1, 4, 16; 16 samples per prompt at temperature 1, voted through Assay's answer
clusters; `runs/k_eval.py`) before/after; and V-STaR best-of-K: a verifier trained with DPO on the run's
own correct/incorrect training samples (`runs/vstar.py`), ranking the same 16 candidates per prompt.
Writes `results.json`, `table.md` and `algorithms.png` to `--out`; `--docs` also rewrites the table and
the plot in docs/algorithms.md and docs/algorithms.png; `--from results.json` re-renders saved results.

On a busy 2-core machine the whole benchmark takes about 6-9 minutes (one seed; `--seeds` more).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from assay.rl_client.runs import driver
from assay.rl_client.runs.config import load_config
from assay.rl_client.runs.example import one_torch_thread, write_example

ALGORITHMS = ("star", "rft", "grpo")
KS = ("1", "4", "16")
GROUP = 8
ROOT = Path(__file__).resolve().parent.parent
DOC, PLOT = ROOT / "docs" / "algorithms.md", ROOT / "docs" / "algorithms.png"


def overrides(algorithm: str, args: argparse.Namespace, work: Path) -> list[str]:
    """The one config, one switch apart; the same start, seed, held-out set and sample budget."""
    common = [
        f"algorithm={algorithm}", f"output.dir={work / algorithm}", "time_budget_s=null",
        "output.checkpoint_every=0", "output.save_model=false", f"data.eval_size={args.eval}",
        "eval_samples=16", "vstar.enabled=true",
        f"train.seed={args.seed}", f"train.generate.group_size={GROUP}", "train.eval_every=0",
    ]  # fmt: skip
    if algorithm == "star":
        return [*common, "star.iterations=4", f"star.prompts={args.steps * args.prompts // 4}",
                f"star.samples={GROUP}", "star.rationalize=false"]  # fmt: skip
    return [*common, f"train.steps={args.steps}", f"train.control.prompts_per_step={args.prompts}",
            "train.control.dynamic_sampling=false"]  # fmt: skip


def run_all(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    started = time.perf_counter()
    with one_torch_thread():
        made = write_example(work / "example", seed=args.seed)
    config = work / "example" / "run.yaml"
    runs = {}
    for algorithm in ALGORITHMS:
        cfg, base = load_config(config, overrides(algorithm, args, work))
        t0 = time.perf_counter()
        summary = driver.run(cfg, base, progress=False, fresh=True)
        summary["wall_s"] = round(time.perf_counter() - t0, 1)
        runs[algorithm] = summary
        print(f"{algorithm}: {summary['wall_s']} s", flush=True)
    return {
        "seed": args.seed,
        "samples_per_algorithm": args.steps * args.prompts * GROUP,
        "eval_prompts": args.eval,
        "sft": made,
        "runs": runs,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(results: dict[str, Any]) -> str:
    """One row per algorithm: greedy accuracy, then Pass@K / Maj@K / best-of-K (before -> after)."""
    columns = [f"{n}@{k}" for k in KS for n in ("Pass", "Maj", "best-of") if n == "Pass" or k != "1"]
    head = "| algorithm | greedy acc. | " + " | ".join(columns) + " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for algorithm, s in results["runs"].items():
        cells = [f"{_fmt(s['accuracy_before'])} -> {_fmt(s['accuracy_after'])}"]
        for k in KS:
            for name in ("pass_at_k", "maj_at_k", "best_of_k"):
                if name != "pass_at_k" and k == "1":
                    continue  # Maj@1 and best-of-1 are Pass@1
                before = s.get(f"{name}_before", {}).get(k)
                after = s.get(f"{name}_after", {}).get(k)
                cells.append(f"{_fmt(before)} -> {_fmt(after)}")
        lines.append(f"| {algorithm} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), sharey=True)
    names = (("pass_at_k", "Pass@K"), ("maj_at_k", "Maj@K"), ("best_of_k", "best-of-K (V-STaR)"))
    for ax, k in zip(axes, KS, strict=True):
        labels = []
        for i, (algorithm, s) in enumerate(results["runs"].items()):
            for j, (name, label) in enumerate(names):
                x = i * 4 + j
                before, after = s.get(f"{name}_before", {}).get(k), s.get(f"{name}_after", {}).get(k)
                if before is not None:
                    ax.bar(x - 0.2, before, 0.4, color=f"C{j}", alpha=0.35)
                if after is not None:
                    ax.bar(x + 0.2, after, 0.4, color=f"C{j}", label=label if i == 0 else None)
            labels.append((i * 4 + 1, algorithm))
        ax.set_xticks([x for x, _ in labels], [name for _, name in labels])
        ax.set_title(f"K = {k} (pale: before, solid: after)", fontsize=9)
        ax.set_ylim(0, 1)
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle(
        f"STaR vs RFT vs GRPO, same start and {results['samples_per_algorithm']} training samples each "
        f"(2-digit addition, seed {results['seed']})",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_docs(text: str, png: Path) -> None:
    """Replace the generated block of docs/algorithms.md and the plot beside it."""
    doc = DOC.read_text(encoding="utf-8")
    begin = "<!-- algorithms: begin (generated by benchmarks/algorithms.py --docs) -->"
    block = f"{begin}\n{text}<!-- algorithms: end -->"
    doc, count = re.subn(
        r"<!-- algorithms: begin.*?<!-- algorithms: end -->", lambda _: block, doc, flags=re.S
    )
    if count != 1:
        raise SystemExit(f"{DOC}: no generated block to replace")
    DOC.write_text(doc, encoding="utf-8")
    shutil.copyfile(png, PLOT)


def report(results: dict[str, Any], out: Path, docs: bool) -> None:
    """table.md and algorithms.png in `out` from the results; with `docs`, into docs/ too."""
    text = table(results) + (
        f"\nSeed {results['seed']}, {results['samples_per_algorithm']} training samples per algorithm, "
        f"{results['eval_prompts']} held-out prompts x 16 samples; the whole benchmark took "
        f"{results['seconds']:.0f} s.\n"
    )
    (out / "table.md").write_text(text, encoding="utf-8")
    png = plot(results, out / "algorithms.png")
    print(text)
    if docs:
        write_docs(text, png)
    print(f"results in {out}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=60, help="GRPO/RFT steps (STaR: the same samples)")
    parser.add_argument("--prompts", type=int, default=16, help="prompts per GRPO/RFT step")
    parser.add_argument("--eval", type=int, default=100, help="held-out prompts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("algorithms-report"), help="where results go")
    parser.add_argument("--docs", action="store_true", help="rewrite docs/algorithms.md's table and plot")
    parser.add_argument("--from", dest="saved", type=Path, help="report a saved results.json, run nothing")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.saved is not None:
        report(json.loads(args.saved.read_text(encoding="utf-8")), args.out, args.docs)
        return
    with tempfile.TemporaryDirectory(prefix="assay-algorithms-") as tmp:
        results = run_all(args, Path(tmp))
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    report(results, args.out, args.docs)


if __name__ == "__main__":
    main()
