"""The prm task's own item field: the reasoning steps, when the trainer splits them itself."""

from __future__ import annotations

from pydantic import Field

from assay.types import TaskFields


class PrmFields(TaskFields):
    steps: list[str] | None = Field(default=None, description="prm: reasoning steps, instead of splitting.")
