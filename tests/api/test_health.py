"""Readiness means warm: /readyz says ready only once the worker processes are started and warmed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import httpx
import pytest
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.engine.scoring import Engine
from assay.settings import Settings


def _poll_ready(client: TestClient) -> httpx.Response:
    pause = threading.Event()
    for _ in range(600):  # bounded: 60 s for the forkserver and the workers to start
        answer = client.get("/readyz")
        if answer.status_code == 200:
            return answer
        pause.wait(0.1)
    raise AssertionError(f"never ready: {answer.text}")


def test_readyz_says_starting_until_the_workers_are_warm(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    warm = threading.Event()
    real_start = Engine.start

    async def gated_start(self: Engine) -> None:
        await asyncio.to_thread(warm.wait, 60)
        await real_start(self)

    monkeypatch.setattr(Engine, "start", gated_start)
    with TestClient(create_app(make_settings())) as client:
        assert client.get("/healthz").status_code == 200  # alive at once
        starting = client.get("/readyz")
        assert starting.status_code == 503 and starting.json()["status"] == "starting"
        warm.set()
        assert _poll_ready(client).json()["status"] == "ready"


def test_warming_up_scores_nothing_a_user_would_see(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings())) as client:
        _poll_ready(client)
        assert "assay_items_total{" not in client.get("/metrics").text


def test_a_started_engine_scores(make_settings: Callable[..., Settings]) -> None:
    with Engine(make_settings(workers=2)) as engine:
        asyncio.run(engine.start())
        assert engine.score([{"task": "math", "response": "\\boxed{2}", "reference": "2"}])[0].reward == 1.0
