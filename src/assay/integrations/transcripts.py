"""Which text of a multi-turn transcript is the model's own: what the trainer adapters score (issue 38).

A verifier must read what the policy wrote, never what a tool printed: a transcript whose only
`\\boxed{42}` is in a tool's output earned 1.0 when the whole transcript was scored, which pays the
policy for making a tool print the answer.

- Message lists (TRL, OpenEnv, items with `messages`): `assistant_text` (`assay.messages`) joins the
  assistant messages' text, in order; tool, user and system messages are never read.
- verl's reward loop decodes the whole response (the model's tokens and the tool responses between
  them) into one string and does not pass `response_mask`. `model_text` removes from it the tool
  responses `AssaySessionTool` recorded (`extra_info["assay_tool_responses"]`), each at its own place,
  in order, whether verl kept it whole or truncated it (`max_tool_response_length`: "...(truncated)...",
  "...(truncated)" or "(truncated)..." in place of its middle, end or start), or the response length cut
  it off at the end. Text the tool never returned is never removed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from assay.messages import assistant_text

__all__ = [
    "assistant_text",
    "model_text",
]

# Where `AssaySessionTool` records what it returned (verl's `extra_fields`, the reward's `extra_info`).
TOOL_RESPONSES = "assay_tool_responses"

_MARK = re.compile(r"(?:\.\.\.)?\(truncated\)(?:\.\.\.)?")


def model_text(transcript: str, tool_responses: Sequence[str]) -> str:
    """`transcript` without the tool responses it holds (see the module docstring)."""
    kept: list[str] = []
    cursor = 0
    for response in tool_responses:
        if not response:
            continue
        span = _locate(transcript, response, cursor)
        if span is None:  # not there: the response length cut the transcript before it
            break
        kept.append(transcript[cursor : span[0]])
        cursor = span[1]
    kept.append(transcript[cursor:])
    return "".join(kept)


def _locate(text: str, response: str, start: int) -> tuple[int, int] | None:
    """Where `response` stands in `text` at or after `start`: whole, truncated by verl, or cut at the end."""
    at = text.find(response, start)
    if at >= 0:  # a response verl truncated is not there whole
        lone = "...(truncated)..."  # verl's middle cut of a 1-character limit keeps it all after this
        before = at - len(lone)
        begin = before if before >= start and text.startswith(lone, before) else at
        return begin, at + len(response)
    return _truncated(text, response, start) or _cut(text, response, start)


def _truncated(text: str, response: str, start: int) -> tuple[int, int] | None:
    """The truncated form with the most of `response` around a marker (a marker the policy wrote itself
    keeps no tool text around it, so it loses to the real one). verl keeps the start before
    "...(truncated)", the end after "(truncated)...", and as much of each around "...(truncated)..."."""
    best: tuple[int, int, int] | None = None  # (kept characters, begin, end)
    for mark in _MARK.finditer(text, start):
        before, after = text[start : mark.start()], text[mark.end() :]
        form = mark.group()
        if form == "...(truncated)...":
            head = tail = _common_both(before, after, response)
        else:
            head = _common_end(before, response) if form == "...(truncated)" else 0
            tail = _common_start(after, response) if form == "(truncated)..." else 0
        if head + tail and (best is None or head + tail > best[0]):
            best = (head + tail, mark.start() - head, mark.end() + tail)
    return None if best is None else (best[1], best[2])


# Overlaps are found by searching for an anchor (the response's first or last characters) with str.find,
# then comparing whole slices: C-speed scans, where trying every length k with a fresh slice each time cost
# seconds per sample once the policy wrote many "(truncated)" marks into a long text of its own.
_ANCHOR = 16


def _heads(before: str, response: str, most: int) -> list[int]:
    """Every k <= `most` with `before` ending in `response[:k]`, largest first."""
    most = min(most, len(before), len(response))
    found: list[int] = []
    anchor = response[: min(_ANCHOR, most)]
    if anchor:
        lo, end = len(before) - most, len(before)
        at = before.find(anchor, lo, end)
        while at != -1:
            k = end - at
            if k >= len(anchor) and before[at:] == response[:k]:
                found.append(k)
            at = before.find(anchor, at + 1, end)
    found += [k for k in range(min(most, len(anchor) - 1), 0, -1) if before.endswith(response[:k])]
    return found


def _tails(after: str, response: str, most: int) -> list[int]:
    """Every k <= `most` with `after` starting with `response[-k:]`, largest first."""
    reverse = response[::-1]
    return _heads(after[: min(most, len(response))][::-1], reverse, most)


def _common_both(before: str, after: str, response: str) -> int:
    """The longest k with `before` ending in `response[:k]` and `after` starting with `response[-k:]`."""
    tails = set(_tails(after, response, len(response) // 2))
    return next((k for k in _heads(before, response, len(response) // 2) if k in tails), 0)


def _common_end(before: str, response: str) -> int:
    """The longest k with `before` ending in `response[:k]`."""
    return next(iter(_heads(before, response, len(response))), 0)


def _common_start(after: str, response: str) -> int:
    """The longest k with `after` starting with `response[-k:]`."""
    return next(iter(_tails(after, response, len(response))), 0)


def _cut(text: str, response: str, start: int) -> tuple[int, int] | None:
    """`response`'s beginning at the very end of `text` (the response length cut it there)."""
    k = _common_end(text[start:], response)
    return (len(text) - k, len(text)) if k else None
