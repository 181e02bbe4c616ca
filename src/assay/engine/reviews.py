"""Second looks: a scorer that reviews another task's verdicts (`Scorer.reviews`, `Scorer.review`).

The judge's second opinion on math answers the rules rejected is one. Each review runs on the event loop
after the item is scored, under the reviewer's own deadline; a review that overruns or fails leaves the
verdict as it was and says so in `details["review"]`, so a reviewer can never lose a verdict.
"""

from __future__ import annotations

import asyncio

from assay.engine.running import Runner
from assay.engine.workers import failure_text
from assay.registry import Registry, Scorer
from assay.settings import Settings
from assay.types import Item, Result


class Reviews:
    """The reviewers of each task under `settings`, and the one way their reviews are applied."""

    def __init__(self, settings: Settings, registry: Registry, runner: Runner) -> None:
        self._runner = runner
        self._by_task: dict[str, list[type[Scorer]]] = {}
        for reviewer_cls in registry.values():
            for task in reviewer_cls.reviews(settings):
                self._by_task.setdefault(task, []).append(reviewer_cls)

    async def __call__(self, item: Item, result: Result) -> Result:
        """`result` after every review of `item`'s task, in registry order."""
        for reviewer_cls in self._by_task.get(item.task, ()):
            reviewer = self._runner.scorers(reviewer_cls)
            deadline = self._runner.deadline(reviewer_cls, item, reviewer_cls.parse_options({}))
            try:
                result = await asyncio.wait_for(reviewer.review(item, result), deadline)
            except TimeoutError:
                why = f"no second look within the {deadline:g}s deadline"
                return _reviewed(result, reviewer_cls.name, "timeout", why)
            except Exception as exc:  # a reviewer's bug must not lose the verdict it reviews
                return _reviewed(result, reviewer_cls.name, "error", failure_text(exc))
        return result


def _reviewed(result: Result, reviewer: str, status: str, reason: str) -> Result:
    """The verdict as it was, with the review that did not finish recorded in its details."""
    review = {"by": reviewer, "status": status, "reason": reason}
    return result.model_copy(update={"details": {**result.details, "review": review}})
