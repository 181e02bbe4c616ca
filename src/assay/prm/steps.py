"""Reasoning steps: given as a list, or split out of a response.

A step may not contain the model's step marker: the marker is how scores are read back (one score per
marker), so a stray marker inside a step would shift every later score onto the wrong step. Such items
are `invalid` rather than silently misaligned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class StepProblem:
    """Why an item's steps cannot be scored (the scorer turns it into `invalid`)."""

    reason: str


def split_steps(response: str, separator: str = DEFAULT_SEPARATOR) -> list[str]:
    """Split on `separator` (blank lines by default); steps are stripped and empty ones dropped.

    With the default separator any run of blank lines (also with spaces, or `\\r\\n`) is one break, as a
    model's paragraphs are rarely separated by exactly two newlines.
    """
    text = response.replace("\r\n", "\n")
    if separator == DEFAULT_SEPARATOR:
        parts: list[str] = []
        current: list[str] = []
        for line in text.split("\n"):
            if line.strip():
                current.append(line)
            elif current:
                parts.append("\n".join(current))
                current = []
        if current:
            parts.append("\n".join(current))
    else:
        parts = text.split(separator)
    return [part.strip() for part in parts if part.strip()]


def check_steps(steps: Sequence[str], marker: str | None, max_steps: int) -> StepProblem | None:
    """None when the steps can be scored, else what is wrong with them."""
    if not steps:
        return StepProblem("no steps to score: the response is empty or only whitespace")
    if len(steps) > max_steps:
        return StepProblem(f"{len(steps)} steps; at most {max_steps} are scored (settings.prm.max_steps)")
    for number, step in enumerate(steps):
        if not isinstance(step, str) or not step.strip():
            return StepProblem(f"step {number} is empty")
        if marker and marker in step:
            return StepProblem(f"step {number} contains the step marker {marker!r}; scores would misalign")
    return None
