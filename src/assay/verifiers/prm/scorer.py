"""The `prm` task: a score for every reasoning step, aggregated into one reward.

Item: `prompt`, and `steps` (a list of strings) or `response` (split on blank lines, or on
`settings.prm.step_separator`); `steps` wins when both are given. Options: `aggregation` (min, last,
product, mean) and `threshold`. With `settings.prm.format: vstar` (a V-STaR verifier, `backends/vstar.py`)
the `response` is scored whole, as written (`response` wins over `steps` there).
Result: `reward` is the aggregate, `details.step_scores` the per-step
probabilities that the step is right, `details.first_error_step` the 0-based index of the first step
scored below `threshold` (null when none is), `correct` null (a graded score).

Runs on the event loop (`runs_in = "async"`): the transformers backend hands items to its micro-batcher
thread and awaits the future (so items from many HTTP calls share one forward pass), the vLLM backend
awaits HTTP. The pipeline bounds each item with `settings.prm.deadline_s`. The model is loaded once per
scorer, i.e. once per server, on first use.

No PRM configured, a model that does not load, a server that is down: `error` with the reason (never a
reward of 0), and the other tasks of the same engine are untouched. Importing this module loads no torch.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from pydantic import Field

from assay.prm.aggregate import Aggregation, aggregate, first_error_step
from assay.prm.backends.base import (
    PrmBackend,
    PrmUnavailable,
    StepRequest,
)
from assay.prm.formats import make_format
from assay.prm.steps import check_steps, split_steps
from assay.registry import Scorer
from assay.settings import PrmSettings, Settings
from assay.types import Item, Result, TaskOptions
from assay.verifiers.prm.fields import PrmFields


class PrmOptions(TaskOptions):
    aggregation: Aggregation = Field(
        "min", description="Step scores -> reward: min (default), last, product or mean."
    )
    threshold: float = Field(
        0.5, ge=0, le=1, description="A step scored below this is an error (details.first_error_step)."
    )


def build_backend(settings: PrmSettings) -> PrmBackend:
    """The backend the settings ask for (nothing heavy is imported or loaded yet)."""
    fmt = make_format(
        settings.format,
        step_tag=settings.step_tag,
        system=settings.system_prompt,
        positive_token=settings.positive_token,
        negative_token=settings.negative_token,
    )
    if settings.format == "vstar":  # a causal LM and its reference, in this process
        from assay.prm.backends.vstar import VStarBackend

        return VStarBackend(settings, fmt)
    if settings.backend == "vllm":
        from assay.prm.backends.vllm_pooling import VllmPoolingBackend

        return VllmPoolingBackend(settings, fmt)
    if not settings.model:
        raise PrmUnavailable("no PRM configured: set settings.prm.model (ASSAY_PRM__MODEL)")
    from assay.prm.backends.transformers_backend import TransformersBackend

    return TransformersBackend(settings, fmt)


class PrmScorer(Scorer[PrmOptions]):
    name: ClassVar[str] = "prm"
    description: ClassVar[str] = (
        "Process reward model: a score per reasoning step (Qwen2.5-Math-PRM, Math-Shepherd, classifier)."
    )
    Options: ClassVar[type[TaskOptions]] = PrmOptions
    Fields = PrmFields
    item_fields: ClassVar[tuple[str, ...]] = ("prompt", "response")
    runs_in = "async"
    work: ClassVar[str] = "prm"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._backend: PrmBackend | None = None
        self._backend_error: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: PrmOptions) -> float:
        return settings.prm.deadline_s

    def score(self, item: Item, options: PrmOptions) -> Result:
        raise NotImplementedError("the prm task runs on the event loop: use ascore")

    @property
    def backend(self) -> PrmBackend:
        """The one backend of this scorer, built on first use; PrmUnavailable if it cannot be."""
        with self._lock:
            if self._backend is None and self._backend_error is None:
                try:
                    self._backend = build_backend(self.settings.prm)
                except PrmUnavailable as exc:
                    self._backend_error = str(exc)
            if self._backend is None:
                raise PrmUnavailable(self._backend_error or "no PRM backend")
            return self._backend

    async def ascore(self, item: Item, options: PrmOptions) -> Result:
        if item.prompt is None:
            return Result.invalid("prm items need a prompt")
        prm = self.settings.prm
        if prm.format == "vstar" and item.response is not None:
            steps = [item.response]  # the response as the policy wrote it: the verifier scores its tokens
        elif (given := PrmFields.of(item).steps) is not None:
            steps = [step.strip() for step in given]
        elif item.response is not None:
            steps = split_steps(item.response, prm.step_separator)
        else:
            return Result.invalid("prm items need steps (a list of strings) or a response to split")
        backend = self.backend  # PrmUnavailable rises to the engine, which makes it `error`
        problem = check_steps(steps, backend.format.marker, prm.max_steps)
        if problem is not None:
            return Result.invalid(problem.reason)
        if not backend.format.per_step:
            steps = ["\n\n".join(steps)]  # a classifier scores the whole response once
        scored = await backend.score(StepRequest(item.prompt, tuple(steps)))  # failures know their status
        return _result(list(scored.scores), options, scored.details)

    def close(self) -> None:
        with self._lock:
            if self._backend is not None:
                self._backend.close()
                self._backend = None


def _result(scores: list[float], options: PrmOptions, extra: dict[str, Any]) -> Result:
    reward = aggregate(scores, options.aggregation)
    first = first_error_step(scores, options.threshold)
    if first is None:
        reason = f"{len(scores)} steps, none below {options.threshold:g}; {options.aggregation} {reward:.4f}"
    else:
        reason = (
            f"{len(scores)} steps; step {first} (0-based) is the first below {options.threshold:g}; "
            f"{options.aggregation} {reward:.4f}"
        )
    details = {
        "step_scores": scores,
        "first_error_step": first,
        "aggregation": options.aggregation,
        "threshold": options.threshold,
        **extra,
    }
    return Result.graded(reward, reason, details=details)
