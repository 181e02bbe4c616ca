"""What the judge tests share besides fixtures (a module of its own: `conftest` is not importable by
name once several conftest files exist)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from assay_testing import free_port

from assay.settings import Settings
from assay.types import Item, Result
from assay.verifiers.judge.scorer import JudgeScorer
from judges.scripted_server import ScriptedJudges

T = TypeVar("T")


def closed_port_url() -> str:
    """A loopback URL nobody listens on: the judge that is down."""
    return f"http://127.0.0.1:{free_port()}/v1"


class Harness:
    """Scorers on one event loop (httpx clients are bound to theirs), all closed at the end."""

    def __init__(self, judges: ScriptedJudges, tmp_path: Path) -> None:
        self.judges = judges
        self.tmp_path = tmp_path
        self.runner = asyncio.Runner()
        self._scorers: list[JudgeScorer] = []

    def settings(self, **judge: Any) -> Settings:
        values: dict[str, Any] = {
            "base_url": self.judges.base_url,
            "model": "fair",
            "retries": 3,
            "backoff_s": 0.001,
            "max_backoff_s": 2.0,
            "timeout_s": 10.0,
            "deadline_s": 10.0,
            "length_min_samples": 8,
        }
        values.update(judge)
        return Settings(workers=1, judge=values)

    def scorer(self, on_cache_event: Callable[[str], None] | None = None, **judge: Any) -> JudgeScorer:
        scorer = JudgeScorer(self.settings(**judge), on_cache_event=on_cache_event)
        self._scorers.append(scorer)
        return scorer

    def score(self, scorer: JudgeScorer, **fields: Any) -> Result:
        item = Item(task="judge", **fields)
        return self.run(scorer.ascore(item, scorer.parse_options(item.options)))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(coro)

    def close(self) -> None:
        for scorer in self._scorers:
            scorer.close()
        self.runner.close()


@dataclass(frozen=True)
class VllmServer:
    """Where the session's vLLM server (conftest's `vllm_server`) listens, and its model name."""

    base_url: str
    model: str
