"""A deterministic fake task and fake baselines for the bench tests.

The response says what each side answers: "A:<assay>|B:<baseline>", where <assay> is yes, no,
timeout or error and <baseline> is yes, no or boom (the baseline raises).
"""

from __future__ import annotations

from typing import Any, ClassVar

from assay.registry import Scorer
from assay.types import Item, Result, TaskOptions


def _parts(response: str | None) -> dict[str, str]:
    return dict(part.split(":", 1) for part in (response or "").split("|") if ":" in part)


class FakeScorer(Scorer):
    name: ClassVar[str] = "fakebench"
    runs_in = "thread"

    def score(self, item: Item, options: TaskOptions) -> Result:
        said = _parts(item.response).get("A", "no")
        if said == "timeout":
            return Result.timeout("fake deadline")
        if said == "error":
            return Result.error("fake infrastructure failure")
        return Result.verdict(said == "yes", reason=f"fake says {said}")


def baseline(item: dict[str, Any]) -> bool:
    said = _parts(item["response"]).get("B", "no")
    if said == "boom":
        raise RuntimeError("baseline blew up")
    return said == "yes"


def always_yes(item: dict[str, Any]) -> bool:
    return True


def returns_text(item: dict[str, Any]) -> str:
    return "maybe"
