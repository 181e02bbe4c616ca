"""The `reasoning_gym` scorer: the answer is extracted once (the math extractor: `\\boxed{}`, `<answer>`
tags, cues), then judged by Assay's math verifier when the dataset answers in numbers or expressions
(forms.is_math) and by the dataset's own `score_answer` otherwise. Where both apply the dataset's own
score is kept in `details` and a disagreement is named there (`details["disagreement"]`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from assay.errors import ConfigError, ItemError, MissingExtraError
from assay.registry import Finding, Scorer, Source, Validation, ValidationProbe
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions
from assay.verifiers.math.extract import Extraction, extract, tagged_answers
from assay.verifiers.math.scorer import MathOptions, MathScorer
from assay.verifiers.reasoning_gym import forms, library
from assay.verifiers.reasoning_gym.fields import ReasoningGymFields
from assay.verifiers.reasoning_gym.guard import refusal

log = logging.getLogger(__name__)


def entry_of(item: Item) -> dict[str, Any]:
    """The entry as reasoning-gym gave it, rebuilt from the item's fields."""
    return {
        "question": item.prompt or "",
        "answer": item.reference,
        "metadata": dict(ReasoningGymFields.of(item).metadata or {}),
    }


def answer_of(response: str, max_chars: int) -> str | Result:
    """The one answer a response gives: an `<answer>` tag's text as written (reasoning-gym's format; a
    grid or a sentence is an answer there), else what the math extractor reads; a verdict of 0 when it
    gives none or several."""
    tagged = tagged_answers(response)
    if len(tagged) == 1:
        return tagged[0]
    if not tagged and "<answer>" in response.lower():
        # no answer, reward 0 (the contract): countdown's own scorer gives an empty one 0.01
        return Result.verdict(False, "the <answer> tag is empty", details={"scorer": "reasoning-gym"})
    found = extract(response, max_chars)
    if not isinstance(found, Extraction):
        return Result.verdict(False, found.reason, details={"scorer": "reasoning-gym"})
    if len(found.answers) > 1 or len(tagged) > 1:
        return Result.verdict(
            False, "several different answers (a hedge)", details={"scorer": "reasoning-gym"}
        )
    return found.answers[0]


def own_verdict(item: Item, answer: str) -> tuple[float, str]:
    """The dataset's own score of `answer`, with its reason; 0 for an answer it must not evaluate."""
    refused = refusal(answer)
    if refused is not None:
        return 0.0, f"the answer is not given to reasoning-gym's scorer: {refused}"
    dataset = ReasoningGymFields.of(item).dataset
    score = library.own_score(dataset or "", answer, entry_of(item))
    return score, f"reasoning-gym's {dataset} scorer: {score:g}"


class ReasoningGymValidation(Validation):
    """The reference in `<answer>` tags is accepted (where the entry has one); an empty answer is not;
    and the dataset's own scorer agrees that the reference answers the entry (where a scorer reads the
    metadata, as the integration datasets' differentiate the answer, a gold edited away from its
    question is caught)."""

    def read_reference(self, result: Result) -> list[Finding]:
        said = result.details.get("disagreement")
        if not said:
            return []
        return [Finding("reference_rejected", f"the dataset's own scorer rejects the reference: {said}")]

    def most(self, repeats: int) -> int:
        return 2

    def probes(self, index: int, item: Item, repeats: int) -> list[ValidationProbe]:
        empty = ValidationProbe.answer(index, item, "<answer></answer>", "rejected", "an empty answer")
        if not item.reference:
            return [empty]
        tagged = f"<answer>{item.reference}</answer>"
        return [
            ValidationProbe.answer(index, item, tagged, "accepted", "the reference in <answer> tags"),
            empty,
        ]


class ReasoningGymSource(Source):
    """`{dataset: NAME, size: N, seed: S}` draws N entries of dataset NAME with seed S."""

    def rows(self, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
        unknown = set(spec) - {"dataset", "size", "seed"}
        if unknown or not isinstance(spec.get("dataset"), str):
            raise ConfigError(
                f"reasoning_gym draws with {{dataset: NAME, size: N, seed: S}}, got {dict(spec)}"
            )
        size, seed = spec.get("size", 100), spec.get("seed", 0)
        if not isinstance(size, int) or not isinstance(seed, int):
            raise ConfigError(f"reasoning_gym: size and seed must be integers, got {size!r} and {seed!r}")
        try:
            return library.draw(spec["dataset"], size, seed)
        except ItemError as exc:
            raise ConfigError(f"reasoning_gym: {exc}") from exc


class ReasoningGymScorer(Scorer[TaskOptions]):
    name: ClassVar[str] = "reasoning_gym"
    description: ClassVar[str] = (
        "An entry of a reasoning-gym dataset: Assay's math verdict or the dataset's own."
    )
    Fields = ReasoningGymFields
    item_fields: ClassVar[tuple[str, ...]] = ("prompt", "response", "reference")
    runs_in = "process"
    validation: ClassVar[Validation] = ReasoningGymValidation()
    source: ClassVar[Source] = ReasoningGymSource()

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._math = MathScorer(settings)

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: TaskOptions) -> float:
        return max(settings.deadline_s, settings.math.deadline_s)

    def score(self, item: Item, options: TaskOptions) -> Result:
        try:
            return self._score(item)
        except MissingExtraError as exc:
            return Result.error(str(exc))
        except (ItemError, ConfigError) as exc:
            return Result.invalid(str(exc))
        except Exception as exc:  # total: a dataset's scorer failing must not lose the batch
            log.exception("reasoning_gym scorer failed")
            return Result.error(f"reasoning-gym scorer failed: {type(exc).__name__}: {exc}")

    def _score(self, item: Item) -> Result:
        dataset = ReasoningGymFields.of(item).dataset
        if not dataset:
            return Result.invalid(
                "reasoning_gym items need `dataset`: the reasoning-gym dataset of the entry"
            )
        if item.response is None:
            return Result.invalid("reasoning_gym items need a response")
        library.check_name(dataset)
        if item.reference and (refused := refusal(item.reference)):
            return Result.invalid(f"the reference is not given to reasoning-gym's scorer: {refused}")
        if item.reference and forms.is_math(dataset):
            return self._math_verdict(item)
        answer = answer_of(item.response, self.settings.math.max_response_chars)
        if isinstance(answer, Result):
            return answer
        score, reason = own_verdict(item, answer)
        return Result.partial(
            score >= 1.0, score, reason, extracted=answer, details={"scorer": "reasoning-gym"}
        )

    def _math_verdict(self, item: Item) -> Result:
        math_item = Item(task="math", prompt=item.prompt, response=item.response, reference=item.reference)
        verdict = self._math.score(math_item, MathOptions())
        if verdict.status != "ok":
            return verdict
        details: dict[str, Any] = {**(verdict.details or {}), "scorer": "assay-math"}
        if verdict.extracted:
            own, _ = own_verdict(item, verdict.extracted)
            details["reasoning_gym_score"] = own
            if (own >= 1.0) != bool(verdict.correct):
                says = "correct" if verdict.correct else "wrong"
                details["disagreement"] = f"Assay's math verifier says {says}; reasoning-gym scores {own:g}"
        return verdict.model_copy(update={"details": details})
