"""The code task's own item fields: the program's language and the tests it is run against."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from assay.types import TaskFields, number_as_text

# Keys of a code test whose value is text compared or fed as text (`expected` stays a value).
_NUMERIC_TEXT_TEST_KEYS = ("stdin", "stdout")


class CodeFields(TaskFields):
    language: str | None = Field(default=None, description="code: language of the program (python).")
    tests: list[dict[str, Any]] | None = Field(
        default=None, description='code: [{"stdin","stdout"}] or [{"fn_name","args","expected"}].'
    )
    hidden_tests: list[dict[str, Any]] | None = Field(
        default=None,
        description="code: more tests of the same shapes, counted in the reward and never returned.",
    )

    @field_validator("tests", mode="before")
    @classmethod
    def _test_numbers_as_text(cls, value: Any) -> Any:
        """A test's stdin and stdout given as numbers (datasets store them so) are their text."""
        if not isinstance(value, list):
            return value
        return [
            {k: number_as_text(v) if k in _NUMERIC_TEXT_TEST_KEYS else v for k, v in t.items()}
            if isinstance(t, dict)
            else t
            for t in value
        ]
