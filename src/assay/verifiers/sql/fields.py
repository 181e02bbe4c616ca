"""The sql task's own item fields: which database the query runs on, in which dialect."""

from __future__ import annotations

from pydantic import Field

from assay.types import TaskFields


class SqlFields(TaskFields):
    db_id: str | None = Field(default=None, description="sql: name of a database the server knows.")
    dialect: str | None = Field(default=None, description="sql: dialect of the predicted SQL.")
