"""V-STaR in a configured run (issue 42 item 4): keep the generator's samples, train a verifier on them,
report best-of-K with it beside Pass@K and Maj@K.

During the run, `SampleRecorder` (a reward source around the run's own) keeps every scored training
sample, prompt, response and verdict, in `vstar/samples.jsonl`, tagged with the step it was scored in
(a resumed run drops the lines of steps after its checkpoint, so it keeps what an uninterrupted run
keeps). Held-out evaluations never reach it: only prompts of the training set are kept. After the run,
`finish` builds the preference pairs, trains the verifier from the run's starting model with DPO
(`assay.rl_client.verifier`, V-STaR, arXiv:2402.06457), saves it in `verifier/` (servable by the `prm`
task, `format: vstar`), and ranks the held-out candidates that the Pass@K/Maj@K evaluation sampled before
and after the run (`runs/k_eval.py` keeps them): best-of-K, K = 1, 4, 16, is the mean over prompts of
the exact expected correctness of the top-scored of K candidates.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from assay.jsonl import read_lines
from assay.rl_client import checkpoints
from assay.rl_client import verifier as dpo
from assay.rl_client.filter import RewardSource, WrappedRewards
from assay.rl_client.runs.k_eval import KS, correct_of
from assay.rl_client.runs.models import load_model
from assay.rl_client.runs.session import Session
from assay.types import Result

SAMPLES = "vstar/samples.jsonl"
VERIFIER_DIR = "verifier"


class SampleRecorder(WrappedRewards):
    """A reward source that passes every call to `inner` and keeps the scored samples of `prompts`."""

    def __init__(self, inner: RewardSource, prompts: Iterable[str], path: Path) -> None:
        super().__init__(inner)
        self.prompts = frozenset(prompts)
        self.path = path
        self.pending: list[dict[str, Any]] = []

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        results = await self.inner.ascore(items)
        self.keep(items, results)
        return results

    def __getattr__(self, name: str) -> Any:
        """ascore_trees and the like go through untouched. The run's source (`TaskMix`) scores groups as
        flat items, so every scored training sample passes `ascore`."""
        if name == "inner":  # not set yet (copying): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def keep(self, items: Sequence[dict[str, Any]], results: Sequence[Result]) -> None:
        for item, result in zip(items, results, strict=True):
            label = correct_of(result)
            if label is not None and item.get("prompt") in self.prompts:
                row = {"prompt": item["prompt"], "response": item["response"], "correct": label}
                self.pending.append(row)

    def flush(self, step: int) -> None:
        """Write what was kept since the last flush, tagged with `step`."""
        rows, self.pending = self.pending, []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.writelines(json.dumps({"step": step, **row}) + "\n" for row in rows)

    def truncate(self, step: int) -> None:
        """Drop the samples of steps after `step` (a resume from that step's checkpoint)."""
        self.pending = []
        rows = [r for r in read_rows(self.path) if r["step"] <= step]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


class Recording:
    """An algorithm (`driver.Algorithm`) whose steps also flush the recorder."""

    def __init__(self, inner: Any, recorder: SampleRecorder) -> None:
        self.inner = inner
        self.recorder = recorder

    @property
    def step(self) -> int:
        return int(self.inner.step)

    @step.setter
    def step(self, value: int) -> None:
        self.inner.step = value

    @property
    def history(self) -> list[dict[str, Any]]:
        return list(self.inner.history)

    @history.setter
    def history(self, value: list[dict[str, Any]]) -> None:
        self.inner.history = value

    @property
    def reward_requests(self) -> int:
        return int(self.inner.reward_requests)

    def train_step(self) -> dict[str, Any]:
        record: dict[str, Any] = self.inner.train_step()
        self.recorder.flush(self.inner.step)
        return record

    def save(self, directory: Path) -> Path:
        return Path(self.inner.save(directory))

    def load(self, directory: Path) -> None:
        self.inner.load(directory)
        self.recorder.truncate(self.inner.step)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The recorded samples. The file is appended step by step, so a kill during a flush can leave its
    last line cut short: such a line is dropped (its step is past any checkpoint a resume starts from)."""
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as lines:
        return [line.value for line in read_lines(lines, objects=True) if line.value is not None]


def start(session: Session) -> SampleRecorder:
    """The recorder of a run starting anew (an earlier run's samples in the directory are dropped; a
    resumed one's are cut back by `Recording.load`)."""
    path = session.out / SAMPLES
    if not (session.cfg.output.resume and checkpoints.newest(session.out / "checkpoints")):
        path.unlink(missing_ok=True)
    return SampleRecorder(session.rewards, (p.prompt for p in session.train), path)


def finish(
    session: Session, candidates: dict[str, Path]
) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, float | None]]]]:
    """Train the verifier on the kept samples, save it, and rank each set of held-out candidates
    (`{"before": path, "after": path}`, as `k_eval` wrote them). Returns the summary's `vstar` report and
    `{"before": {"best_of_k": {"1": ..., "4": ..., "16": ...}}, "after": ...}`."""
    cfg, out = session.cfg.vstar, session.out
    samples = [dpo.Candidate(r["prompt"], r["response"], r["correct"]) for r in read_rows(out / SAMPLES)]
    pairs = dpo.preference_pairs(samples, cfg.pairs_per_prompt, session.cfg.train.seed)
    # both start as the run's starting model (V-STaR initialises the verifier from the generator)
    verifier, reference = (load_model(session.cfg.model, session.base) for _ in range(2))
    encoder = dpo.Encoder(session.tokenizer.tokenizer, session.tokenizer.add_special_tokens)
    settings = dpo.DpoSettings(cfg.beta, cfg.steps, cfg.batch, cfg.lr, session.cfg.train.seed)
    report = dpo.train_dpo(verifier, reference, encoder, pairs, settings)
    summary: dict[str, Any] = {
        "vstar": {
            "samples": len(samples),
            "correct": sum(s.correct for s in samples),
            "prompts": len({s.prompt for s in samples}),
            **report.as_dict(),
            "dir": VERIFIER_DIR,
        }
    }
    if not pairs:
        return summary, {}  # nothing to learn from: no verifier, no best-of-K
    dpo.save(out / VERIFIER_DIR, verifier, reference, session.tokenizer.tokenizer, cfg.beta,
             session.tokenizer.add_special_tokens, report)  # fmt: skip
    best = {}
    for when, path in candidates.items():
        rows = read_rows(path)
        if rows:
            texts = [(r["prompt"], r["response"]) for r in rows]
            ranked = dpo.scores(verifier, reference, encoder, texts, cfg.beta)
            best[when] = {"best_of_k": best_of_k_table(rows, ranked)}
    return summary, best


def best_of_k_table(rows: Sequence[dict[str, Any]], ranked: Sequence[float]) -> dict[str, float | None]:
    """Means over prompts of best-of-K for K in KS (a prompt with fewer than K candidates left out)."""
    groups: dict[str, list[tuple[float, bool]]] = {}
    for row, score in zip(rows, ranked, strict=True):
        groups.setdefault(row["id"], []).append((score, bool(row["correct"])))
    table: dict[str, float | None] = {}
    for k in KS:
        values = [v for g in groups.values() if (v := dpo.best_of_k(g, k)) is not None]
        if values or k <= max((len(g) for g in groups.values()), default=0):
            table[str(k)] = round(statistics.fmean(values), 4) if values else None
    return table
