"""The transformers backend against an independent forward pass, and its batch-composition invariance."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from prm_reference import Reference

from assay.prm.backends.base import PrmBadInput, PrmUnavailable, StepRequest, StepScores
from assay.prm.backends.transformers_backend import TransformersBackend
from assay.prm.formats import QWEN_SYSTEM, make_format
from assay.settings import PrmSettings

PROMPT = "Janet has 16 eggs. She eats 3 and bakes with 4. How many are left?"
STEPS = (
    "She starts with 16 eggs.",
    "After eating 3 she has 16 - 3 = 13.",
    "After baking with 4 she has 13 - 4 = 9.",
    "The answer is \\boxed{9}.",
)
# Items of different lengths, so that a batch of them is padded.
OTHERS = [
    StepRequest("What is 2 + 2?", ("2 + 2 = 4.",)),
    StepRequest(PROMPT * 3, tuple(f"Step {i}: 16 - 3 = 13 and 13 - 4 = 9, so 9 {i}." for i in range(9))),
    StepRequest("Add 1 and 1.", ("1 + 1 = 2.", "So 2.")),
]


def _backend(settings: PrmSettings) -> TransformersBackend:
    backend = TransformersBackend(
        settings, make_format(settings.format, step_tag=settings.step_tag, system=settings.system_prompt)
    )
    backend.load()
    return backend


def _score_concurrently(backend: TransformersBackend, requests: list[StepRequest]) -> list[StepScores]:
    async def run() -> list[StepScores]:
        return list(await asyncio.gather(*(backend.score(r) for r in requests)))

    return asyncio.run(run())


def test_qwen_step_scores_match_an_independent_forward_pass(
    prm_settings: Callable[..., PrmSettings], qwen_prm_dir: Path
) -> None:
    backend = _backend(prm_settings())
    try:
        [got] = backend.forward([backend.encode(StepRequest(PROMPT, STEPS))])
    finally:
        backend.close()
    expected = Reference(qwen_prm_dir).qwen_step_scores(QWEN_SYSTEM, PROMPT, STEPS)
    assert len(got.scores) == len(STEPS)
    assert got.scores == pytest.approx(expected, abs=1e-5)
    assert max(expected) - min(expected) > 0.05, "the tiny model's scores should not all be equal"


def test_shepherd_step_scores_match_an_independent_forward_pass(
    prm_settings: Callable[..., PrmSettings], shepherd_dir: Path
) -> None:
    settings = prm_settings(model=str(shepherd_dir), format="math-shepherd", step_tag="<extra_0>")
    backend = TransformersBackend(settings, make_format("math-shepherd", step_tag="<extra_0>"))
    try:
        [got] = _score_concurrently(backend, [StepRequest(PROMPT, STEPS)])
    finally:
        backend.close()
    expected = Reference(shepherd_dir).shepherd_step_scores(PROMPT, STEPS, "<extra_0>")
    assert got.scores == pytest.approx(expected, abs=1e-5)


def test_classifier_score_matches_an_independent_forward_pass(
    prm_settings: Callable[..., PrmSettings], classifier_dir: Path
) -> None:
    response = "\n\n".join(STEPS)
    backend = TransformersBackend(prm_settings(model=str(classifier_dir)), make_format("classifier"))
    try:
        [got] = _score_concurrently(backend, [StepRequest(PROMPT, (response,))])
    finally:
        backend.close()
    assert got.scores == pytest.approx(
        [Reference(classifier_dir).classifier_score(PROMPT, response)], abs=1e-5
    )


@pytest.mark.parametrize("position", [0, 1, 3])
def test_scores_do_not_depend_on_the_batch_they_are_in(
    prm_settings: Callable[..., PrmSettings], position: int
) -> None:
    backend = _backend(prm_settings())
    try:
        item = backend.encode(StepRequest(PROMPT, STEPS))
        others = [backend.encode(r) for r in OTHERS]
        [alone] = backend.forward([item])
        batch = [*others[:position], item, *others[position:]]
        assert len({len(e.input_ids) for e in batch}) == len(batch), "the batch must need padding"
        together = backend.forward(batch)[position]
    finally:
        backend.close()
    assert together.scores == pytest.approx(alone.scores, abs=1e-5, rel=0)


def test_the_micro_batcher_gathers_concurrent_items_into_one_forward_pass(
    prm_settings: Callable[..., PrmSettings],
) -> None:
    requests = [StepRequest(PROMPT, STEPS), *OTHERS]
    # A long wait, ended by the item count: the round closes as soon as all four are in.
    backend = _backend(prm_settings(batch_wait_ms=60_000, max_batch_items=len(requests)))
    try:
        alone = [backend.forward([backend.encode(r)])[0] for r in requests]
        together = _score_concurrently(backend, requests)
        assert backend.batcher.batch_sizes == [len(requests)]
    finally:
        backend.close()
    for one, many in zip(alone, together, strict=True):
        assert many.scores == pytest.approx(one.scores, abs=1e-5, rel=0)


def test_a_token_budget_splits_a_round_into_batches_without_changing_scores(
    prm_settings: Callable[..., PrmSettings],
) -> None:
    requests = [StepRequest(PROMPT, STEPS), *OTHERS]
    # No wait: the longest item alone exceeds the budget, so the four never share one batch anyway.
    backend = _backend(prm_settings(batch_wait_ms=0, max_batch_items=len(requests), max_batch_tokens=400))
    try:
        alone = [backend.forward([backend.encode(r)])[0] for r in requests]
        together = _score_concurrently(backend, requests)
    finally:
        backend.close()
    sizes = backend.batcher.batch_sizes
    assert sum(sizes) == len(requests) and len(sizes) > 1
    for one, many in zip(alone, together, strict=True):
        assert many.scores == pytest.approx(one.scores, abs=1e-5, rel=0)


def test_an_input_longer_than_the_limit_is_bad_input(prm_settings: Callable[..., PrmSettings]) -> None:
    backend = _backend(prm_settings(max_tokens=32))
    try:
        with pytest.raises(PrmBadInput, match="at most 32"):
            backend.encode(StepRequest(PROMPT, STEPS))
    finally:
        backend.close()


def test_a_missing_model_directory_is_unavailable_with_the_setting_named(
    prm_settings: Callable[..., PrmSettings], tmp_path: Path
) -> None:
    backend = TransformersBackend(prm_settings(model=str(tmp_path / "nope")), make_format("qwen"))
    try:
        with pytest.raises(PrmUnavailable, match=r"settings\.prm\.model"):
            _score_concurrently(backend, [StepRequest(PROMPT, STEPS)])
    finally:
        backend.close()


def test_the_qwen_format_refuses_a_checkpoint_of_another_architecture(
    prm_settings: Callable[..., PrmSettings], classifier_dir: Path
) -> None:
    backend = TransformersBackend(prm_settings(model=str(classifier_dir)), make_format("qwen"))
    try:
        with pytest.raises(PrmUnavailable, match="Qwen2ForProcessRewardModel"):
            backend.load()
    finally:
        backend.close()
