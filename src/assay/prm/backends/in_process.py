"""A model in this process behind a micro-batcher, the shape both in-process PRM backends share (the
transformers PRM and the V-STaR verifier): loaded once, on first use, in the batcher's thread, with a
missing extra or an unloadable model reported as what it is. A subclass gives `_load_model`, `encode`
and `forward`."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import threading
from typing import Generic, Protocol, TypeVar

from assay.errors import MissingExtraError
from assay.prm.backends.base import PrmUnavailable, StepRequest, StepScores
from assay.prm.batching import MicroBatcher
from assay.prm.formats import PrmFormat
from assay.settings import PrmSettings

log = logging.getLogger(__name__)


class _Encoded(Protocol):
    @property
    def input_ids(self) -> list[int]: ...


EncodedT = TypeVar("EncodedT", bound=_Encoded)
LoadedT = TypeVar("LoadedT")


class InProcessBackend(Generic[EncodedT, LoadedT]):
    """The batcher, the one-time load and the request path; `what` names the model in a load failure."""

    what = "model"
    batcher_name = "assay-prm-batcher"

    def __init__(self, settings: PrmSettings, fmt: PrmFormat) -> None:
        self.settings = settings
        self.format = fmt
        self._loaded: LoadedT | None = None
        self._load_lock = threading.Lock()
        self._batcher: MicroBatcher[StepRequest, EncodedT, StepScores] = MicroBatcher(
            self.load,
            self.encode,
            lambda encoded: len(encoded.input_ids),
            self.forward,
            max_tokens=settings.max_batch_tokens,
            max_items=settings.max_batch_items,
            wait_s=settings.batch_wait_ms / 1000.0,
            name=self.batcher_name,
        )

    @property
    def batcher(self) -> MicroBatcher[StepRequest, EncodedT, StepScores]:
        return self._batcher

    async def score(self, request: StepRequest) -> StepScores:
        return await asyncio.wrap_future(self._batcher.submit(request))

    def close(self) -> None:
        self._batcher.close()
        self._loaded = None

    def load(self) -> None:
        """Load once (the batcher calls this when it starts; tests may call it first)."""
        with self._load_lock:
            if self._loaded is not None:
                return
            for package in ("torch", "transformers"):
                if importlib.util.find_spec(package) is None:
                    raise MissingExtraError(package, "prm")
            try:
                self._loaded = self._load_model()
            except (PrmUnavailable, MissingExtraError):
                raise
            except Exception as exc:  # OSError (no such model), ValueError (bad config), CUDA errors ...
                raise PrmUnavailable(
                    f"cannot load the {self.what} {self.settings.model!r} (settings.prm.model): "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            log.info("%s %s loaded", self.what, self.settings.model)

    def _load_model(self) -> LoadedT:
        raise NotImplementedError

    def encode(self, request: StepRequest) -> EncodedT:
        raise NotImplementedError

    def forward(self, batch: list[EncodedT]) -> list[StepScores]:
        raise NotImplementedError

    def _require(self) -> LoadedT:
        if self._loaded is None:
            raise PrmUnavailable(f"the {self.what} is not loaded")
        return self._loaded


__all__ = ["InProcessBackend"]
