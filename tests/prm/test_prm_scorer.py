"""The `prm` task through the one pipeline (Engine), next to another task."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assay.engine.scoring import Engine
from assay.prm.backends.transformers_backend import TransformersBackend
from assay.settings import Settings
from assay.types import Status
from assay.verifiers.prm.scorer import PrmScorer

MATH_OK = {"task": "math", "response": "so the answer is \\boxed{\\frac12}", "reference": "0.5"}
PROMPT = "Tom has 3 apples and buys 4 more. How many apples does he have?"
STEPS = ["Tom starts with 3 apples.", "He buys 4, so 3 + 4 = 7.", "The answer is \\boxed{7}."]


def _prm(**options: Any) -> dict[str, Any]:
    return {"task": "prm", "prompt": PROMPT, "steps": STEPS, "options": options}


@pytest.fixture
def settings(make_settings: Callable[..., Settings], qwen_prm_dir: Path) -> Settings:
    prm = {"model": str(qwen_prm_dir), "device": "cpu", "dtype": "float32", "deadline_s": 60.0}
    return make_settings(workers=1, prm=prm)


def test_a_prm_item_is_graded_next_to_a_math_item(settings: Settings) -> None:
    with Engine(settings) as engine:
        prm, math = engine.score([_prm(), MATH_OK])
    assert math.status is Status.OK and math.reward == 1.0
    assert prm.status is Status.OK and prm.correct is None
    scores = prm.details["step_scores"]
    assert len(scores) == len(STEPS) and all(0.0 <= s <= 1.0 for s in scores)
    assert prm.reward == pytest.approx(min(scores))


def test_aggregation_and_threshold_options_shape_the_result(settings: Settings) -> None:
    with Engine(settings) as engine:
        results = engine.score([_prm(aggregation=how) for how in ("min", "last", "product", "mean")])
        scores = results[0].details["step_scores"]
        middle = sorted(scores)[1]
        (strict,) = engine.score([_prm(threshold=middle + 1e-9)])
    rewards = [r.reward for r in results]
    product = scores[0] * scores[1] * scores[2]
    assert rewards == pytest.approx([min(scores), scores[-1], product, sum(scores) / 3])
    expected_first = next(i for i, s in enumerate(scores) if s < middle + 1e-9)
    assert strict.details["first_error_step"] == expected_first


def test_a_response_split_on_blank_lines_scores_like_the_same_steps(settings: Settings) -> None:
    split = {"task": "prm", "prompt": PROMPT, "response": "\n\n".join(STEPS)}
    with Engine(settings) as engine:
        given, parsed = engine.score([_prm(), split])
    assert parsed.details["step_scores"] == pytest.approx(given.details["step_scores"], abs=1e-5)


def test_items_from_separate_calls_share_one_forward_pass(
    make_settings: Callable[..., Settings], qwen_prm_dir: Path
) -> None:
    prm: dict[str, Any] = {"model": str(qwen_prm_dir), "device": "cpu", "dtype": "float32"}
    prm.update({"batch_wait_ms": 60_000, "max_batch_items": 3})  # the third item closes the round
    settings = make_settings(workers=1, prm=prm)

    async def three_calls(engine: Engine) -> list[Any]:
        calls = [engine.score_async([_prm(aggregation=how)]) for how in ("min", "last", "mean")]
        return [r for results in await asyncio.gather(*calls) for r in results]

    with Engine(settings) as engine:
        results = asyncio.run(three_calls(engine))
        scorer = engine.scorer("prm")
        assert isinstance(scorer, PrmScorer)
        backend = scorer.backend
        assert isinstance(backend, TransformersBackend)
        assert backend.batcher.batch_sizes == [3]
    assert [r.status for r in results] == [Status.OK] * 3


def test_without_a_model_prm_is_an_error_naming_the_setting_and_math_still_works(
    make_settings: Callable[..., Settings],
) -> None:
    with Engine(make_settings(workers=1)) as engine:
        prm, math = engine.score([_prm(), MATH_OK])
    assert prm.status is Status.ERROR and prm.reward is None
    assert "ASSAY_PRM__MODEL" in prm.reason
    assert math.status is Status.OK and math.reward == 1.0


def test_a_model_that_does_not_load_is_an_error_and_math_still_works(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = make_settings(workers=1, prm={"model": str(tmp_path / "missing"), "device": "cpu"})
    with Engine(settings) as engine:
        prm, math, again = engine.score([_prm(), MATH_OK, _prm()])
    assert prm.status is Status.ERROR and again.status is Status.ERROR
    assert "settings.prm.model" in prm.reason and str(tmp_path / "missing") in prm.reason
    assert math.status is Status.OK


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ({"task": "prm", "steps": ["a"]}, "need a prompt"),
        ({"task": "prm", "prompt": "p"}, "need steps"),
        ({"task": "prm", "prompt": "p", "response": "  \n\n "}, "no steps"),
        ({"task": "prm", "prompt": "p", "steps": ["a", "b<extra_0>c"]}, "step 1 contains the step marker"),
        ({"task": "prm", "prompt": "p", "steps": ["a", "  "]}, "step 1 is empty"),
        ({"task": "prm", "prompt": "p", "steps": ["a"], "options": {"aggregate": "min"}}, "did you mean"),
        ({"task": "prm", "prompt": "p", "steps": ["a"], "options": {"threshold": 2}}, "threshold"),
    ],
)
def test_malformed_prm_items_are_invalid(settings: Settings, item: dict[str, Any], reason: str) -> None:
    with Engine(settings) as engine:
        (result,) = engine.score([item])
    assert result.status is Status.INVALID and result.reward is None
    assert reason in result.reason


def test_an_item_too_long_for_the_model_is_invalid(
    make_settings: Callable[..., Settings], qwen_prm_dir: Path
) -> None:
    prm = {"model": str(qwen_prm_dir), "device": "cpu", "max_tokens": 40}
    with Engine(make_settings(workers=1, prm=prm)) as engine:
        (result,) = engine.score([_prm()])
    assert result.status is Status.INVALID and "at most 40" in result.reason


def test_importing_and_building_the_scorer_loads_no_torch() -> None:
    code = (
        "import sys\n"
        "from assay.settings import Settings\n"
        "from assay.verifiers.prm.scorer import PrmScorer, build_backend\n"
        "build_backend(Settings(prm={'model': '/nowhere'}).prm)\n"
        "build_backend(Settings(prm={'backend': 'vllm', 'base_url': 'http://127.0.0.1:9'}).prm)\n"
        "print(','.join(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == ""


def test_a_deadline_passed_while_batching_is_a_timeout_not_an_error(
    make_settings: Callable[..., Settings], qwen_prm_dir: Path
) -> None:
    # The round waits for nine more items that never come; the pipeline's deadline ends the wait.
    prm = {"model": str(qwen_prm_dir), "device": "cpu", "deadline_s": 0.2, "batch_wait_ms": 600_000}
    with Engine(make_settings(workers=1, prm={**prm, "max_batch_items": 10})) as engine:
        (result,) = engine.score([_prm()])
    assert result.status is Status.TIMEOUT and result.reward is None


@pytest.mark.parametrize("fmt", ["math-shepherd", "classifier"])
def test_the_other_formats_are_served_from_settings(
    make_settings: Callable[..., Settings], shepherd_dir: Path, classifier_dir: Path, fmt: str
) -> None:
    model = shepherd_dir if fmt == "math-shepherd" else classifier_dir
    prm = {"model": str(model), "device": "cpu", "format": fmt, "step_tag": "<extra_0>"}
    with Engine(make_settings(workers=1, prm=prm)) as engine:
        (result,) = engine.score([_prm()])
    assert result.status is Status.OK
    expected_scores = len(STEPS) if fmt == "math-shepherd" else 1  # a classifier scores the whole response
    assert len(result.details["step_scores"]) == expected_scores
