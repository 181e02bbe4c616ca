"""The judge task's own item fields: the mode, the other response of a pair, the rubric."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from assay.types import TaskFields, number_as_text


class JudgeFields(TaskFields):
    mode: str | None = Field(default=None, description="judge: pointwise (default) or pairwise.")
    response_b: str | None = Field(default=None, description="judge: the other response (pairwise).")
    rubric: str | None = Field(default=None, description="judge: the rubric to grade against.")

    @field_validator("response_b", mode="before")
    @classmethod
    def _response_b_as_text(cls, value: Any) -> Any:
        # (a name of its own: a validator named as one of Item's would be hidden by it in the item model)
        return number_as_text(value)
