"""Tasks whose answer equivalence misbehaves on purpose, loaded through `Settings.plugins` to test that a
group's clustering never fails or hangs the group (issue 42). They live in an importable module because
process-run tasks are built inside worker processes."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import ClassVar

from assay.registry import Equivalence, Scorer
from assay.settings import Settings
from assay.types import Item, Result


class _Hangs(Equivalence):
    available: ClassVar[bool] = True

    def equivalent(self, a: str, b: str) -> bool:
        threading.Event().wait()  # never set: only killing the worker ends it
        return False


class _Raises(Equivalence):
    available: ClassVar[bool] = True

    def key(self, answer: str) -> Hashable | None:
        raise ValueError("no key")

    def equivalent(self, a: str, b: str) -> bool:
        raise ValueError("no comparison")


class _EchoScorer(Scorer):
    """Correct when the response equals the reference; the response is the extracted answer."""

    runs_in = "process"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)

    def score(self, item: Item, options: object) -> Result:
        return Result.verdict(item.response == item.reference, "echo", extracted=item.response)


class HangingVoteScorer(_EchoScorer):
    name: ClassVar[str] = "hanging_vote"
    equivalence: ClassVar[Equivalence] = _Hangs()


class RaisingVoteScorer(_EchoScorer):
    name: ClassVar[str] = "raising_vote"
    equivalence: ClassVar[Equivalence] = _Raises()


VOTE_PLUGINS = [f"vote_plugins:{cls.__name__}" for cls in (HangingVoteScorer, RaisingVoteScorer)]
