"""What group shaping and rubrics know about each member of a group beyond its verdict: the fields a
trainer may put on a group's items (`length`, `exit_position`, `tool_calls`), which the group path takes
off before scoring (they are not item fields), and the rule for a length the trainer did not give.

Length: the trainer's token count when every scored item carries `length`; otherwise, when no item
carries one, the server counts characters of the response (it sees text, not tokens), and the group's
`stats.shaping.length_unit` says which. A group where some items carry `length` and some do not mixes two
units, so it gets a per-group error rather than a silent mix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from assay.types import Result, Status

MEMBER_FIELDS = ("length", "exit_position", "tool_calls")
LengthUnit = Literal["tokens", "chars"]


class ShapingInputError(ValueError):
    """A group's members cannot be shaped as given (a per-group error, never a crash or a silent 0)."""


class ShapingStats(BaseModel):
    """What `stats.shaping` reports: the method, the quantities the shaped rewards were computed from,
    and how many members were left out. Fields that do not belong to the method stay null."""

    method: str = Field(description="shorter_better, adapt_think, s_grpo or rubric.")
    error: str | None = Field(
        None, description="Why this group could not be shaped (every shaped_reward null)."
    )
    length_unit: LengthUnit | None = Field(
        None, description="tokens (the trainer's `length`) or chars (counted by the server)."
    )
    n_unscored: int = Field(
        0, description="Members not `ok`: shaped_reward null, left out of every quantity."
    )
    sol: float | None = Field(None, description="shorter_better: the target length (SOL).")
    sol_source: Literal["shortest_correct", "mean_length"] | None = Field(
        None, description="shorter_better: shortest correct member, or the mean when none is correct."
    )
    reference_accuracy: float | None = Field(None, description="adapt_think: the reference model's accuracy.")
    n_nothinking: int | None = Field(None, description="adapt_think: members opening with `</think>`.")
    n_thinking: int | None = Field(None, description="adapt_think: the other scored members.")
    n_over_cap: int | None = Field(
        None, description="adapt_think: NoThinking members longer than the cap (no bonus)."
    )
    n_format_failed: int | None = Field(
        None, description="adapt_think: members failing the think-tag format gate (accuracy 0)."
    )
    nothinking_max_length: float | None = Field(None, description="adapt_think: the cap used.")
    n_correct_exits: int | None = Field(None, description="s_grpo: correct exits in the serial group.")
    first_correct_exit: float | None = Field(None, description="s_grpo: exit_position of the first.")
    n_gated: int | None = Field(None, description="rubric: scored members that failed a gate.")


@dataclass(frozen=True)
class Member:
    """One item of a group as shaping sees it: its result, its response and the trainer's fields."""

    result: Result
    response: str | None
    extras: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.result.status is Status.OK and self.result.reward is not None


def take_member_fields(raw: Any) -> tuple[Any, dict[str, Any]]:
    """(the item without the member fields, those fields): what the scorer sees, and what shaping sees."""
    if not isinstance(raw, dict) or not any(k in raw for k in MEMBER_FIELDS):
        return raw, {}
    return {k: v for k, v in raw.items() if k not in MEMBER_FIELDS}, {
        k: raw[k] for k in MEMBER_FIELDS if k in raw
    }


def number_field(member: Member, index: int, name: str) -> float | None:
    """A member's numeric field (finite, >= 0), None when absent; anything else is a ShapingInputError."""
    value = member.extras.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ShapingInputError(f"item {index}: {name} must be a number >= 0, got {value!r}")
    return float(value)


def lengths(members: Sequence[Member]) -> tuple[list[float | None], LengthUnit]:
    """Each scored member's length (None for an unscored one) and the unit (see the module docstring)."""
    given = [number_field(m, i, "length") for i, m in enumerate(members)]
    if any(v is not None for v in given):
        missing = [i for i, (m, v) in enumerate(zip(members, given, strict=True)) if m.ok and v is None]
        if missing:
            raise ShapingInputError(
                f"length is given on some items but not on item {missing[0]}: give it on every item "
                "(tokens) or on none (the server counts characters)"
            )
        return [v if m.ok else None for m, v in zip(members, given, strict=True)], "tokens"
    out: list[float | None] = []
    for i, m in enumerate(members):
        if m.ok and m.response is None:
            raise ShapingInputError(f"item {i} has no response text to count and no length")
        out.append(float(len(m.response)) if m.ok and m.response is not None else None)
    return out, "chars"
