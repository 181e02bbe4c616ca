"""Reward composition: a group's `rubric` combines named components with weights and gates, in the manner
of OpenEnv's rubrics (a gate zeroes the reward when its condition fails) and verifiers' weighted reward
functions (the reward is the weighted sum of the components).

Components (`kind`), each giving a raw value per scored member:
- `correctness`: the verdict as 0/1 (`correct`), or the reward of a graded task.
- `format`: 1 or 0 by `check`: `think_closed` (exactly one `</think>` and no `<think>`: the chat template
  opened the block), `think` (opens with `<think>`, one of each tag, in order), `extracted` (the task
  found an answer to extract).
- `length`: the member's length (the trainer's tokens, or characters counted by the server; see
  `assay.groups.members`).
- `tool_calls`: the item's `tool_calls`, a count or a list of calls (its length).

reward = fail_value if any gate fails, else sum(weight * raw). A gate passes when `min <= raw <= max`
(a gate with neither bound passes when raw >= 1). Every component's raw value, its weighted value and
whether the gates passed go into the result's `details["rubric"]`; an unscored member keeps its result
as it was and gets no reward.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.groups.members import LengthUnit, Member, ShapingInputError, lengths
from assay.groups.stats import raw_score
from assay.types import Result


class Component(BaseModel):
    """One named part of a rubric."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", description="Its key in details.")
    kind: Literal["correctness", "format", "length", "tool_calls"]
    weight: float = Field(1.0, ge=-1e6, le=1e6, description="Its weight in the sum (0 for a pure gate).")
    gate: bool = Field(False, description="Failing it sets the reward to the rubric's fail_value.")
    min: float | None = Field(None, description="A gate passes when raw >= min ...")
    max: float | None = Field(None, description="... and raw <= max.")
    check: Literal["think_closed", "think", "extracted"] | None = Field(
        None, description="format: which format (default extracted)."
    )

    @model_validator(mode="after")
    def _coherent(self) -> Component:
        if self.check is not None and self.kind != "format":
            raise ValueError(f"check belongs to a format component, not to {self.kind}")
        if (self.min is not None or self.max is not None) and not self.gate:
            raise ValueError("min and max bound a gate: set gate: true")
        return self


class Rubric(BaseModel):
    """Weighted components with gates; see the module docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)

    components: list[Component] = Field(min_length=1, max_length=16)
    fail_value: float = Field(0.0, ge=-1e6, le=1e6, description="The reward when a gate fails.")

    @property
    def method(self) -> str:
        return "rubric"

    @model_validator(mode="after")
    def _unique_names(self) -> Rubric:
        names = [c.name for c in self.components]
        if len(set(names)) != len(names):
            raise ValueError(f"component names repeat: {names}")
        return self


def format_ok(check: str, member: Member) -> bool:
    """The format checks a `format` component names (see the module docstring)."""
    text = member.response or ""
    if check == "extracted":
        return member.result.extracted is not None
    if check == "think_closed":
        return "<think>" not in text and text.count("</think>") == 1
    opened = text.lstrip().startswith("<think>")
    return opened and text.count("<think>") == 1 and text.count("</think>") == 1


def _tool_calls(member: Member, index: int) -> float:
    value = member.extras.get("tool_calls")
    if isinstance(value, list):
        return float(len(value))
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return float(value)
    raise ShapingInputError(f"item {index}: a tool_calls component needs tool_calls (a count or a list)")


def _raw(component: Component, member: Member, index: int, length: float | None) -> float:
    if component.kind == "correctness":
        score = raw_score(member.result)
        return 0.0 if score is None else score
    if component.kind == "format":
        return float(format_ok(component.check or "extracted", member))
    if component.kind == "length":
        return 0.0 if length is None else length
    return _tool_calls(member, index)


def _passes(component: Component, raw: float) -> bool:
    if component.min is None and component.max is None:
        return raw >= 1.0
    return (component.min is None or raw >= component.min) and (component.max is None or raw <= component.max)


def compose(
    rubric: Rubric, members: Sequence[Member]
) -> tuple[list[float | None], list[Result], int, LengthUnit | None]:
    """(rewards, results with `details["rubric"]`, members that failed a gate, the length unit used)."""
    unit: LengthUnit | None = None
    lens: list[float | None] = [None] * len(members)
    if any(c.kind == "length" for c in rubric.components):
        lens, unit = lengths(members)
    rewards: list[float | None] = []
    results: list[Result] = []
    gated = 0
    for index, (member, length) in enumerate(zip(members, lens, strict=True)):
        if not member.ok:
            rewards.append(None)
            results.append(member.result)
            continue
        raw = {c.name: _raw(c, member, index, length) for c in rubric.components}
        passed = all(_passes(c, raw[c.name]) for c in rubric.components if c.gate)
        weighted = {c.name: c.weight * raw[c.name] for c in rubric.components}
        gated += not passed
        rewards.append(sum(weighted.values()) if passed else rubric.fail_value)
        details = {**member.result.details, "rubric": {"raw": raw, "weighted": weighted, "passed": passed}}
        results.append(member.result.model_copy(update={"details": details}))
    return rewards, results, gated, unit
