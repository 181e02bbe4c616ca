"""The judge end to end through a real vLLM OpenAI server (CPU) serving a tiny random model.

Random weights give meaningless text, so this pins the wiring, not judging quality: the request reaches a
real server, its logprobs are read in the real wire format, and whatever the model says ends exactly as
the parser dictates (an ok graded result when a score can be read, else an error carrying the raw text).
The same greedy request sent directly tells the test what the model said.
"""

from __future__ import annotations

import httpx
import pytest

from assay.judges.client import ChatReply, ChatRequest, JudgeClient
from assay.judges.failures import JudgeUnparseable
from assay.judges.parsing import parse_score, parse_verdict
from assay.judges.prompts import VERDICT_A, VERDICT_B, VERDICT_TIE, Rubric, render_pairwise, render_pointwise
from assay.types import Status
from judges.conftest import VLLM_PYTHON
from judges.judge_harness import Harness, VllmServer

pytestmark = [pytest.mark.slow, pytest.mark.requires_vllm]

QUESTION, ANSWER, OTHER = "What is 2 + 2?", "It is 4.", "It is 5."
MAX_TOKENS = 16


def _direct(server: VllmServer, messages: tuple[tuple[str, str], ...], top_logprobs: int) -> str:
    request = ChatRequest(server.model, messages, 0.0, MAX_TOKENS, top_logprobs)
    answer = httpx.post(f"{server.base_url}/chat/completions", json=request.payload(), timeout=120)
    answer.raise_for_status()
    return str(answer.json()["choices"][0]["message"]["content"] or "")


def test_the_vllm_environment_is_installed() -> None:
    # CI runs scripts/setup_vllm_venv.sh; a missing environment must fail here, never skip silently.
    if not VLLM_PYTHON.exists():
        pytest.fail(f"{VLLM_PYTHON} is missing: run scripts/setup_vllm_venv.sh")


def test_pointwise_judging_through_vllm_ends_as_the_parser_dictates(
    vllm_server: VllmServer, harness: Harness
) -> None:
    scorer = harness.scorer(
        base_url=vllm_server.base_url,
        model=vllm_server.model,
        max_tokens=MAX_TOKENS,
        top_logprobs=5,
        timeout_s=120,
        structured_output=False,  # the marker path; test_judge_smollm2.py covers constrained output
    )
    result = harness.score(scorer, prompt=QUESTION, response=ANSWER)
    said = _direct(
        vllm_server, render_pointwise(QUESTION, ANSWER, Rubric.build(None, 1, 5, None), None).messages, 5
    )
    try:
        parsed = parse_score(said, 1, 5)
    except JudgeUnparseable:
        assert (result.status, result.reward) == (Status.ERROR, None)
        assert result.reason == "the judge's answer holds no score"
        assert result.details["raw"] == said
    else:
        assert result.status is Status.OK and result.reward is not None and 0.0 <= result.reward <= 1.0
        assert result.details["votes"][0]["text_score"] == parsed.value


def test_pairwise_judging_through_vllm_ends_as_the_parser_dictates(
    vllm_server: VllmServer, harness: Harness
) -> None:
    scorer = harness.scorer(
        base_url=vllm_server.base_url,
        model=vllm_server.model,
        max_tokens=MAX_TOKENS,
        timeout_s=120,
        structured_output=False,  # the marker path; test_judge_smollm2.py covers constrained output
    )
    result = harness.score(scorer, prompt=QUESTION, response=ANSWER, response_b=OTHER, mode="pairwise")
    said = [
        _direct(vllm_server, render_pairwise(QUESTION, first, second, None).messages, 0)
        for first, second in ((ANSWER, OTHER), (OTHER, ANSWER))
    ]
    verdicts = {VERDICT_A: "A", VERDICT_B: "B", VERDICT_TIE: "tie"}
    try:
        for text in said:
            parse_verdict(text, verdicts)
    except JudgeUnparseable:
        assert (result.status, result.reward) == (Status.ERROR, None)
        assert result.reason == "the judge's answer holds no verdict"
        assert result.details["raw"] in said
    else:
        assert result.status is Status.OK and result.reward in (0.0, 0.5, 1.0)


def test_vllm_logprobs_are_read_from_the_real_wire_format(vllm_server: VllmServer, harness: Harness) -> None:
    client = JudgeClient(vllm_server.base_url, timeout_s=120)
    request = ChatRequest(vllm_server.model, (("user", QUESTION),), 0.0, MAX_TOKENS, top_logprobs=3)

    async def ask() -> ChatReply:
        try:
            return await client.complete(request)
        finally:
            await client.aclose()

    completion = harness.run(ask())
    assert completion.finish_reason in ("length", "stop")
    tokens = completion.tokens
    assert 1 <= len(tokens) <= MAX_TOKENS
    assert "".join(t.token for t in tokens) == completion.text
    for token in tokens:
        assert 1 <= len(token.top) <= 3 and all(logprob <= 0.0 for _, logprob in token.top)
        assert token.top[0][1] >= token.logprob - 1e-6  # greedy: the chosen token is the most likely
