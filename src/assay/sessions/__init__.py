"""Stateful sessions with tools (issue 25): a rollout opens a session on an item, calls tools (a
persistent sandboxed Python interpreter, read-only SQL, the item's public tests), and is verified at the
end by the same scorer as `/v1/rewards`. See docs/sessions.md.

Public names: the tool plugin interface (`Tool`, `ToolArguments`, `Observation`, `SessionContext`,
`ToolUnavailable`), the limits (`SessionLimits`) and the store (`SessionManager`, `SessionGone`,
`SessionsFull`).
"""

from assay.sessions.limits import SessionLimits
from assay.sessions.store import SessionGone, SessionManager, SessionsFull, StepResult
from assay.sessions.tools import (
    Observation,
    SessionContext,
    Tool,
    ToolArguments,
    ToolRegistry,
    ToolUnavailable,
)

__all__ = [
    "Observation",
    "SessionContext",
    "SessionGone",
    "SessionLimits",
    "SessionManager",
    "SessionsFull",
    "StepResult",
    "Tool",
    "ToolArguments",
    "ToolRegistry",
    "ToolUnavailable",
]
