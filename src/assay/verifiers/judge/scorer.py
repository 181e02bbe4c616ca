"""The `judge` task: an LLM judge over any OpenAI-compatible backend, with its known biases corrected.

Item: `prompt`, `response`, optional `reference` and `rubric`, `mode` = `pointwise` (default) or
`pairwise` (with `response_b`). Options (`JudgeOptions`) select the scale, G-Eval logprob weighting,
position swapping, length control and ensembles. The reward is in [0, 1]; `correct` is null (graded).

Failures are statuses, never scores: no backend configured, an unreachable or overloaded backend, a
rejected request or a garbled answer are `error` (with the judge's raw text when there is one); a slow
backend is `timeout`. An ensemble is all or nothing: if one vote fails the item fails, rather than being
scored silently by fewer judges than asked.

Runs on the event loop (`runs_in = "async"`). An item's deadline (`judge.deadline_s`) counts the judge's own
time, not the item's wait for a request slot (assay.judges.clock); the pipeline's outer bound adds
`judge.wait_s` for that wait. `quality` keeps per-model order consistency, tie, position and parse-failure
rates for /metrics (assay.judges.quality). One HTTP client per event loop (an httpx client is bound to the
loop it was made on), built on first use and closed by `close()` (from outside the loop) or `await aclose()`
(from inside it, e.g. an app's shutdown). The length regressions (assay.judges.length) observe every freshly
judged item of their judge configuration (a cache replay is not a new judgement), so that `length_control`
has data when an item asks for it; they live in memory, per scorer. `cache_stats` (and the `on_cache_event`
callback) expose cache hits and misses to metrics.

Before any judge sees a response (assay.judges.guard, issue 28): verdict markup, grader instructions and
forged delimiters in `response` and `response_b` are neutralised and named in `details["flags"]`; a
`response` with no content beyond a master key (":", "Thought process:", "Solution") is not sent at all
(reward 0, flag `master_key`; against a `response_b` that is empty too, a tie). The math second opinion
(`review`) asks only about a candidate that is a mathematical expression (`guard.is_math_answer`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from prometheus_client.registry import Collector
from pydantic import Field, model_validator

from assay.judges.cache import CacheStats, JudgeCache
from assay.judges.client import JudgeClient
from assay.judges.clock import ItemClock
from assay.judges.ensemble import Aggregated, aggregate
from assay.judges.failures import JudgeFailure, JudgeNotConfigured, failure_result
from assay.judges.guard import MASTER_KEY, Guarded, neutralise
from assay.judges.judge import Judge
from assay.judges.length import LengthRegression
from assay.judges.pairwise import PairwiseVote, compare
from assay.judges.pointwise import PointwiseVote, grade
from assay.judges.prompts import Rubric
from assay.judges.quality import JudgeQuality, JudgeQualityCollector
from assay.judges.second_opinion import second_opinion
from assay.metrics import ReadCounter
from assay.per_loop import PerLoop
from assay.registry import Audit, Scorer
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions
from assay.verifiers.judge.audit import JudgeAudit
from assay.verifiers.judge.fields import JudgeFields


class JudgeOptions(TaskOptions):
    min_score: int = Field(1, ge=0, le=99, description="Lowest score of the rubric's scale.")
    max_score: int = Field(5, ge=1, le=100, description="Highest score of the rubric's scale.")
    score_descriptions: dict[int, str] | None = Field(
        None, description="Score -> description, one per score of the scale (Prometheus-style)."
    )
    use_logprobs: bool = Field(True, description="G-Eval: expected score over the score tokens' logprobs.")
    swap: bool = Field(True, description="Pairwise: judge both orders; a win needs both to agree.")
    length_control: bool = Field(False, description="Reward with the length term regressed out.")
    # Bounded (issue 28): the length term moves a reward by |slope| at most, and a reward spans 0..1;
    # a slope of -Infinity gave a wrong answer 1.0.
    length_slope: float | None = Field(
        None, ge=-1, le=1, description="Length control: a fixed slope instead of a fit."
    )
    length_scale: float | None = Field(
        None,
        gt=0,
        le=1_000_000,
        description="Length control: characters per unit of tanh (default: the window's std).",
    )
    models: list[str] | None = Field(
        None, min_length=1, max_length=8, description="Judge models of the ensemble (configured ones)."
    )
    samples: int = Field(1, ge=1, le=16, description="Samples per model (at sample_temperature if >1).")
    aggregate: Literal["mean", "majority"] = Field("mean", description="How ensemble votes combine.")
    temperature: float | None = Field(None, ge=0, le=2, description="Override the judge's temperature.")

    @model_validator(mode="after")
    def _scale_is_consistent(self) -> JudgeOptions:
        if self.max_score <= self.min_score:
            raise ValueError(f"max_score ({self.max_score}) must exceed min_score ({self.min_score})")
        wanted = set(range(self.min_score, self.max_score + 1))
        if self.score_descriptions is not None and set(self.score_descriptions) != wanted:
            raise ValueError(
                f"score_descriptions must describe exactly the scores {self.min_score}..{self.max_score}"
            )
        return self


def _item_problem(item: Item) -> str | None:
    """Why the item cannot be judged as given, or None."""
    fields = JudgeFields.of(item)
    mode = fields.mode or "pointwise"
    if mode not in ("pointwise", "pairwise"):
        return f'judge mode must be "pointwise" or "pairwise", got {fields.mode!r}'
    if not item.prompt:
        return "judge items need a prompt (the judge grades the response to it)"
    if item.response is None:
        return "judge items need a response"
    if mode == "pairwise" and fields.response_b is None:
        return "pairwise judge items need response_b"
    if mode == "pointwise" and fields.response_b is not None:
        return 'response_b is only read in mode "pairwise"; set mode or drop response_b'
    return None


class JudgeScorer(Scorer[JudgeOptions]):
    name: ClassVar[str] = "judge"
    description: ClassVar[str] = (
        "An LLM judge (pointwise rubric or debiased pairwise) over an OpenAI-compatible API."
    )
    Options: ClassVar[type[TaskOptions]] = JudgeOptions
    Fields = JudgeFields
    item_fields: ClassVar[tuple[str, ...]] = ("prompt", "response", "reference")
    runs_in = "async"
    work: ClassVar[str] = "judge"
    audit: ClassVar[Audit] = JudgeAudit()

    def __init__(self, settings: Settings, on_cache_event: Callable[[str], None] | None = None) -> None:
        super().__init__(settings)
        self._clients: PerLoop[JudgeClient] = PerLoop(
            lambda: JudgeClient.from_settings(self.settings.judge), JudgeClient.aclose
        )
        self._cache: JudgeCache | None = None
        self._on_cache_event = on_cache_event
        self._lengths: dict[tuple[str, ...], LengthRegression] = {}
        self.quality = JudgeQuality()

    @property
    def cache_stats(self) -> CacheStats:
        """Cache hits, misses and writes so far (all zero without a cache), for metrics."""
        return self._cache.stats if self._cache is not None else CacheStats()

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: JudgeOptions) -> float:
        """The pipeline's outer bound: the judge's own deadline (enforced in `ascore`) plus its waits."""
        return settings.judge.deadline_s + settings.judge.wait_s

    @classmethod
    def collectors(cls, built: Callable[[], Scorer | None]) -> list[Collector]:
        """The cache's lookups and writes, and the judges' answer quality, for /metrics."""

        def judge() -> JudgeScorer | None:
            scorer = built()
            return scorer if isinstance(scorer, JudgeScorer) else None

        def cache_events() -> dict[str, float]:
            scorer = judge()
            if scorer is None:
                return {}
            stats = scorer.cache_stats
            return {"hit": stats.hits, "miss": stats.misses, "write": stats.writes}

        return [
            ReadCounter(
                "assay_judge_cache", "Judge cache lookups and writes, by event.", "event", cache_events
            ),
            JudgeQualityCollector(lambda: getattr(judge(), "quality", None)),
        ]

    @classmethod
    def reviews(cls, settings: Settings) -> tuple[str, ...]:
        """With `judge.second_opinion` on, the judge re-checks the math answers the rules rejected."""
        return ("math",) if settings.judge.second_opinion else ()

    async def review(self, item: Item, result: Result) -> Result:
        """The second opinion on a math verdict (assay.judges.second_opinion): only a rejection with a
        reference and a candidate that is a mathematical expression is re-checked, and the judge sees
        only the extracted answer and the reference."""
        if not item.reference:
            return result
        judge = self.judge()
        return await second_opinion(
            result, result.extracted, item.reference, judge.client, self.settings, cache=judge.cache
        )

    def score(self, item: Item, options: JudgeOptions) -> Result:
        raise NotImplementedError("the judge runs on the event loop: use ascore")

    async def ascore(self, item: Item, options: JudgeOptions) -> Result:
        problem = _item_problem(item)
        if problem is not None:
            return Result.invalid(problem)
        assert item.response is not None
        guarded = await asyncio.to_thread(_guard, item)  # long texts take a while: off the event loop
        flags = sorted({flag for g in guarded.values() for flag in g.flags})
        if not guarded["response"].substantive:
            return _unjudged(item, guarded, flags)
        shown = item.model_copy(update={name: g.text for name, g in guarded.items()})
        result = await self._judged(shown, options)
        if not flags:
            return result
        where = {name: list(g.flags) for name, g in guarded.items() if g.flags}
        return result.model_copy(update={"details": {**result.details, "flags": flags, "guard": where}})

    async def _judged(self, item: Item, options: JudgeOptions) -> Result:
        clock = ItemClock(self.settings.judge.deadline_s)
        try:
            models = self._models(options)
            judge = self.judge()
            async with clock.running_item():
                if (JudgeFields.of(item).mode or "pointwise") == "pairwise":
                    return await self._pairwise(judge, item, options, models)
                return await self._pointwise(judge, item, options, models)
        except JudgeFailure as exc:
            return failure_result(exc)
        except TimeoutError:
            waited = (
                f" (plus {clock.waited_s:.3g}s waiting for a request slot)" if clock.waited_s >= 0.001 else ""
            )
            return Result.timeout(
                f"no verdict within the {clock.deadline_s:g}s deadline{waited}",
                details={"waited_s": round(clock.waited_s, 3)},
            )

    # -- backend -----------------------------------------------------------------------------------
    def _models(self, options: JudgeOptions) -> list[str]:
        config = self.settings.judge
        if config.base_url is None:
            raise JudgeNotConfigured(
                "no judge backend configured: set ASSAY_JUDGE__BASE_URL (judge.base_url)"
            )
        if config.model is None:
            raise JudgeNotConfigured("no judge model configured: set ASSAY_JUDGE__MODEL (judge.model)")
        if options.models is None:
            return [config.model]
        known = {config.model, *config.extra_models}
        unknown = [m for m in options.models if m not in known]
        if unknown:
            raise JudgeNotConfigured(
                f"judge models {unknown} are not configured; add them to ASSAY_JUDGE__EXTRA_MODELS"
            )
        return list(options.models)

    def judge(self) -> Judge:
        """The judge for the running event loop (its client built on first use)."""
        client = self._clients.get()
        config = self.settings.judge
        return Judge(
            client,
            self._open_cache(),
            config.max_tokens,
            config.top_logprobs,
            config.structured_output,
            self.quality,
        )

    def _open_cache(self) -> JudgeCache | None:
        path: Path | None = self.settings.judge.cache_path
        if self._cache is None and path is not None:
            try:
                self._cache = JudgeCache(path, on_event=self._on_cache_event)
            except (OSError, sqlite3.Error) as exc:  # a bad path is configuration, reported per item
                raise JudgeNotConfigured(f"cannot open the judge cache at {path}: {exc}") from exc
        return self._cache

    # -- modes -------------------------------------------------------------------------------------
    def _temperature(self, options: JudgeOptions) -> float:
        if options.temperature is not None:
            return options.temperature
        config = self.settings.judge
        return config.sample_temperature if options.samples > 1 else config.temperature

    async def _votes(
        self,
        ask: Callable[..., Awaitable[Any]],
        judge: Judge,
        item: Item,
        options: JudgeOptions,
        models: list[str],
        **mode_args: Any,
    ) -> list[Any]:
        """Every vote of the item (each model, each sample) by `ask` (`grade` or `compare`)."""
        return await _all_votes(
            ask(
                judge,
                model,
                prompt=item.prompt,
                response=item.response,
                reference=item.reference,
                temperature=self._temperature(options),
                sample=sample,
                **mode_args,
            )
            for model, sample in _draws(models, options.samples)
        )

    async def _pointwise(self, judge: Judge, item: Item, options: JudgeOptions, models: list[str]) -> Result:
        rubric = Rubric.build(
            JudgeFields.of(item).rubric, options.min_score, options.max_score, options.score_descriptions
        )
        assert item.response is not None
        votes: list[PointwiseVote] = await self._votes(
            grade, judge, item, options, models, rubric=rubric, use_logprobs=options.use_logprobs
        )
        span = rubric.high - rubric.low
        grid = [(round(v.score) - rubric.low) / span for v in votes]
        combined = aggregate([v.reward for v in votes], grid, options.aggregate)
        baseline = len(item.reference) if item.reference is not None else None
        lengths = {"response": len(item.response), "reference": baseline}
        details: dict[str, Any] = {
            "mode": "pointwise",
            "scale": [rubric.low, rubric.high],
            "score": round(rubric.low + combined.reward * span, 6),
            "votes": [v.details() for v in votes],
            "lengths": lengths,
        }
        reason = f"judge score {details['score']:g} on {rubric.low}..{rubric.high}"
        return self._finish(item, options, models, combined.reward, baseline, details, reason, combined)

    async def _pairwise(self, judge: Judge, item: Item, options: JudgeOptions, models: list[str]) -> Result:
        fields = JudgeFields.of(item)
        assert item.response is not None and fields.response_b is not None
        votes: list[PairwiseVote] = await self._votes(
            compare, judge, item, options, models, response_b=fields.response_b, criteria=fields.rubric,
            swap=options.swap,
        )  # fmt: skip
        for vote in votes:
            if not vote.cached:  # a replay says nothing new about the judge
                self.quality.pairwise(vote.model, [w for w in (vote.first, vote.second) if w is not None])
        rewards = [v.reward for v in votes]
        combined = aggregate(rewards, rewards, options.aggregate)
        details: dict[str, Any] = {
            "mode": "pairwise",
            "swap": options.swap,
            "consistent": all(v.consistent for v in votes),
            "orders_disagree": sum(not v.consistent for v in votes),
            "votes": [v.details() for v in votes],
            "lengths": {"response": len(item.response), "response_b": len(fields.response_b)},
        }
        reason = _pairwise_reason(votes, combined.reward)
        baseline = len(fields.response_b)
        return self._finish(item, options, models, combined.reward, baseline, details, reason, combined)

    def _finish(
        self,
        item: Item,
        options: JudgeOptions,
        models: list[str],
        reward: float,
        baseline: int | None,
        details: dict[str, Any],
        reason: str,
        combined: Aggregated,
    ) -> Result:
        """Ensemble and length-control details, the length observation, and the graded result."""
        assert item.response is not None
        if combined.votes > 1:
            details["ensemble"] = combined.details(options.aggregate)
        details["cached"] = sum(int(v["cached"]) for v in details["votes"])
        fresh = details["cached"] == 0  # only new judgements feed the length regression
        key = (JudgeFields.of(item).mode or "pointwise", *models)
        regression = self._lengths.setdefault(
            key, LengthRegression(self.settings.judge.length_window, self.settings.judge.length_min_samples)
        )
        if options.length_control:
            adjustment = regression.adjust(
                len(item.response), baseline, reward, options.length_slope, options.length_scale
            )
            details["length_control"] = adjustment.details()
            if adjustment.adjusted != reward:
                reason += f"; length-controlled {reward:.3g} -> {adjustment.adjusted:.3g}"
            reward = adjustment.adjusted
            if fresh:
                regression.observe(len(item.response), baseline, adjustment.raw)
        elif fresh:
            regression.observe(len(item.response), baseline, reward)
        return Result.graded(min(1.0, max(0.0, reward)), reason, details=details)

    # -- lifecycle -------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close the client of the running loop (use from async code that owns the loop)."""
        await self._clients.aclose()

    def close(self) -> None:
        """Close every client on its own loop, then the cache. Clients of closed loops are dropped."""
        self._clients.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None


def _guard(item: Item) -> dict[str, Guarded]:
    assert item.response is not None
    guarded = {"response": neutralise(item.response)}
    if (other := JudgeFields.of(item).response_b) is not None:
        guarded["response_b"] = neutralise(other)
    return guarded


def _unjudged(item: Item, guarded: dict[str, Guarded], flags: list[str]) -> Result:
    """A response with nothing beyond a master key: reward 0 (a tie against another such), no judge."""
    mode = JudgeFields.of(item).mode or "pointwise"
    other = guarded.get("response_b")
    reward = 0.5 if other is not None and not other.substantive else 0.0
    where = {name: list(g.flags) for name, g in guarded.items() if g.flags}
    reason = (
        "the response has no content beyond cue phrases, punctuation or text addressed to the grader "
        f"({MASTER_KEY}); it was not sent to the judge"
    )
    details = {"mode": mode, "judged": False, "flags": flags, "guard": where}
    return Result.graded(reward, reason, details=details)


def _draws(models: Sequence[str], samples: int) -> list[tuple[str, int | None]]:
    """(model, sample seed) per vote; a single sample has no seed so it matches a plain judgement."""
    return [(model, sample if samples > 1 else None) for model in models for sample in range(samples)]


async def _all_votes(calls: Any) -> list[Any]:
    """Run every vote; the first failure (in vote order) fails the item, with the count that failed."""
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    failures: list[JudgeFailure] = []
    for outcome in outcomes:
        if isinstance(outcome, JudgeFailure):
            failures.append(outcome)
        elif isinstance(outcome, BaseException):
            raise outcome  # a bug, not a judge failure: the pipeline reports it
    if failures:
        first = failures[0]
        first.details.setdefault("failed_votes", len(failures))
        first.details.setdefault("votes", len(outcomes))
        raise first
    return list(outcomes)


def _pairwise_reason(votes: list[PairwiseVote], reward: float) -> str:
    if len(votes) == 1:
        vote = votes[0]
        if vote.second is not None and not vote.consistent:
            return (
                f"the orders disagree ({vote.first} when shown first, {vote.second} when shown second): "
                "position bias, scored as a tie"
            )
        verdict = {1.0: "response preferred", 0.0: "response_b preferred", 0.5: "tie"}[vote.reward]
        return f"{verdict}{' in both orders' if vote.second is not None and vote.first != 'tie' else ''}"
    agree = statistics.fmean(1.0 if v.consistent else 0.0 for v in votes)
    return f"ensemble of {len(votes)} votes: reward {reward:g} ({agree:.0%} order-consistent)"
