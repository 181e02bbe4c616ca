"""OpenRLHF's remote reward protocol: `POST /get_reward` {query, prompts, labels} -> {rewards, scores,
extra_logs}.

OpenRLHF sends `query` as the decoded prompt plus response; the response is `query` minus its prompt
prefix. Its client turns the lists into tensors, so there is no room for a null reward: by default a
batch with an item that could not be scored gets no rewards, rather than hiding a failure as 0. A timeout
or error is refused (503, Retry-After: OpenRLHF retries it, and a retry can succeed); a batch with an
invalid item (every item is invalid when `prompts` or `labels` do not pair up with `query`) is answered
200 with `rewards: null` and the reason in `error`: OpenRLHF 0.11.2 retries any HTTP error 5 times, 1 s
apart, which cannot help an invalid item, and stores the null at once. `ASSAY_OPENRLHF_UNSCORED=zero`
opts into 0.0 for such items, with `extra_logs["scored"]` marking them.

OpenRLHF 0.11.2 swallows both: it logs "Failed to fetch reward" at INFO (after its retries of a 503), and
fails later with "'NoneType' object has no attribute 'size'". So the reason is made legible here: one
warning per unscored item in the server log (`assay.openrlhf` logger) and `assay_openrlhf_unscored_items`
in /metrics, by status and action.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request

from assay.api.body import BoundedRoute
from assay.api.codes import Refusal, refuse
from assay.api.protocol import POST_ERRORS, ErrorBody, OpenRLHFRequest, OpenRLHFResponse
from assay.api.state import admitted, batcher_of, engine_of
from assay.types import Result, Status

router = APIRouter(tags=["compatibility"], route_class=BoundedRoute)
log = logging.getLogger("assay.openrlhf")
_LOGGED_ITEMS = 20  # per batch; a summary line covers the rest


def strip_prompt(query: str, prompt: str | None) -> str:
    """The response part of an OpenRLHF query: after the prompt, wherever special tokens put it."""
    if not prompt:
        return query
    if query.startswith(prompt):
        return query[len(prompt) :]
    at = query.rfind(prompt)
    return query[at + len(prompt) :] if at >= 0 else query


def _report_unscored(request: Request, results: list[Result], action: str) -> None:
    """A log line per unscored item (the reason OpenRLHF never shows) and the metric, by status."""
    bad = [(i, r) for i, r in enumerate(results) if r.status is not Status.OK]
    counter = engine_of(request).metrics.openrlhf_unscored
    for logged, (index, result) in enumerate(bad):
        counter.labels(status=result.status.value, action=action).inc()
        if logged < _LOGGED_ITEMS:
            log.warning(
                "/get_reward item %d of %d %s (%s): %s",
                index,
                len(results),
                "refused the batch" if action == "refused" else "sent as 0.0",
                result.status.value,
                result.reason,
            )
    if len(bad) > _LOGGED_ITEMS:
        log.warning("/get_reward: %d more unscored items in this batch", len(bad) - _LOGGED_ITEMS)


def _unpaired(body: OpenRLHFRequest) -> str | None:
    """Why the lists do not pair up by position, or None. OpenRLHF 0.11.2 sends one entry in each
    (`[query], [prompt], [label]` per sample), so only another client meets this."""
    n = len(body.query)
    for name, values in (("prompts", body.prompts), ("labels", body.labels)):
        if values is not None and len(values) != n:
            return f"{name} has {len(values)} entries but query has {n}; the lists pair up by position"
    return None


def _unscored(results: list[Result]) -> str:
    bad = [(i, r) for i, r in enumerate(results) if r.status is not Status.OK]
    listed = "; ".join(f"#{i} {r.status.value}: {r.reason}" for i, r in bad[:5])
    return f"{len(bad)} of {len(results)} items could not be scored ({listed})"


def _no_rewards(results: list[Result]) -> OpenRLHFResponse:
    """A batch with an invalid item: no rewards, the reason in `error`, and no HTTP error to retry."""
    error = ErrorBody(type=Refusal.INVALID.type, message=_unscored(results))
    return OpenRLHFResponse(rewards=None, scores=None, extra_logs={}, error=error)


@router.post(
    "/get_reward",
    response_model=OpenRLHFResponse,
    responses=POST_ERRORS,
)
async def get_reward(body: OpenRLHFRequest, request: Request) -> OpenRLHFResponse:
    """Score OpenRLHF samples with the task in `ASSAY_OPENRLHF_TASK` (math by default)."""
    engine = engine_of(request)
    settings = engine.settings
    n = len(body.query)
    unpaired = _unpaired(body)
    if unpaired is not None:
        # Every sample `invalid`, answered as any unscorable batch is (refused, or 0.0 where opted in):
        # the schema allows lists of any lengths, and which label belongs to which query is unknown.
        results = [Result.invalid(unpaired, id=str(i)) for i in range(n)]
    else:
        prompts: list[str | None] = list(body.prompts) if body.prompts is not None else [None] * n
        labels: list[str | None] = list(body.labels) if body.labels is not None else [None] * n
        items = [
            {
                "id": str(i),
                "task": settings.openrlhf_task,
                "prompt": p,
                "response": strip_prompt(q, p),
                "reference": lab,
            }
            for i, (q, p, lab) in enumerate(zip(body.query, prompts, labels, strict=True))
        ]
        results = await admitted(request, n, batcher_of(request).score(items), f"batch of {n} samples")
    if any(r.status is not Status.OK for r in results):
        refusing = settings.openrlhf_unscored == "error"
        _report_unscored(request, results, "refused" if refusing else "zero")
        if refusing and any(r.status is Status.INVALID for r in results):
            return _no_rewards(results)
        if refusing:
            raise refuse(Refusal.UNAVAILABLE, _unscored(results), headers={"Retry-After": "1"})
    rewards = [r.reward if r.reward is not None else 0.0 for r in results]
    return OpenRLHFResponse(
        rewards=rewards,
        scores=rewards,
        extra_logs={
            "scored": [1.0 if r.status is Status.OK else 0.0 for r in results],
            "correct": [1.0 if r.correct else 0.0 for r in results],
        },
    )
