"""What every PRM backend offers the scorer, and the ways it can fail (each an `AssayError` that knows
its status; the engine maps it, so the scorer just lets it rise).

PrmFailure
├── PrmUnavailable   the model or server cannot score anything now -> `error` (never a reward of 0)
├── PrmTimeout       the backend took longer than its own request timeout -> `timeout`
└── PrmBadInput      this item cannot be scored by this model (too long, marker lost) -> `invalid`
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from assay.errors import AssayError, BackendTimeout, BackendUnavailable, ItemError
from assay.prm.formats import PrmFormat


class PrmFailure(AssayError):
    """Base of the failures a backend reports; the message is shown to the user as the reason."""


class PrmUnavailable(PrmFailure, BackendUnavailable):
    """Infrastructure: no model, a model that fails to load, a server that is down or answers nonsense."""


class PrmTimeout(PrmFailure, BackendTimeout):
    """The backend took longer than its own request timeout."""


class PrmBadInput(PrmFailure, ItemError):
    """The item itself cannot be scored by this model (for example, longer than its context)."""


@dataclass(frozen=True)
class StepRequest:
    """One item to score: the prompt and its steps, in the backend's format."""

    prompt: str
    steps: tuple[str, ...]


@dataclass(frozen=True)
class StepScores:
    """Scores in [0, 1], one per step (one in all for a classifier), and what else the backend knows."""

    scores: tuple[float, ...]
    details: dict[str, Any] = field(default_factory=dict)


class PrmBackend(Protocol):
    """Scores requests; safe to call from any event loop; `close` releases the model or clients."""

    format: PrmFormat

    async def score(self, request: StepRequest) -> StepScores: ...

    def close(self) -> None: ...
