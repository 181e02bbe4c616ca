"""The reasoning_gym task's own item fields: the entry as reasoning-gym generated it (its question is
the prompt and its answer the reference)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay.types import TaskFields


class ReasoningGymFields(TaskFields):
    dataset: str | None = Field(default=None, description="reasoning_gym: the dataset the entry comes from.")
    metadata: dict[str, Any] | None = Field(
        default=None, description="reasoning_gym: the entry's metadata, which its dataset's scorer reads."
    )
