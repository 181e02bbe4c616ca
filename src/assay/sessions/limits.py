"""What one session may use. A request names any subset; the rest are the server's defaults, and each is
capped by the server's maximum (asking for more is a clear 422, never a silent clamp)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from assay.errors import ItemError

if TYPE_CHECKING:
    from assay.settings import SessionSettings

# field -> (default setting, maximum setting)
_BOUNDS = {
    "ttl_s": ("ttl_s", "max_ttl_s"),
    "max_steps": ("max_steps", "max_max_steps"),
    "call_wall_s": ("call_wall_s", "max_call_wall_s"),
    "cpu_s": ("cpu_s", "max_cpu_s"),
    "memory_mb": ("memory_mb", "max_memory_mb"),
    "output_bytes": ("output_bytes", "max_output_bytes"),
}


class LimitsTooLarge(ItemError):
    """A session asked for more than the server allows (HTTP 422, naming the setting)."""


class SessionLimits(BaseModel):
    """Per-session limits, as requested (None: the server's default)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ttl_s: float | None = Field(
        None, gt=0, description="Idle lifetime: the session ends this long after its last call."
    )
    max_steps: int | None = Field(None, gt=0, description="Tool calls allowed; one more is refused.")
    call_wall_s: float | None = Field(None, gt=0, description="Wall-clock limit of one tool call.")
    cpu_s: float | None = Field(None, gt=0, description="CPU seconds the session's processes may use in all.")
    memory_mb: int | None = Field(None, gt=0, description="Memory of the session's sandbox.")
    output_bytes: int | None = Field(
        None, gt=0, description="Longest observation; the rest is cut and counted."
    )

    def resolved(self, settings: SessionSettings) -> SessionLimits:
        """Every field set: the request's value, or the default; LimitsTooLarge past a maximum."""
        values = {}
        for name, (default, maximum) in _BOUNDS.items():
            value = getattr(self, name)
            value = getattr(settings, default) if value is None else value
            cap = getattr(settings, maximum)
            if value > cap:
                raise LimitsTooLarge(
                    f"limits.{name} {value:g} exceeds this server's maximum {cap:g} (sessions.{maximum})"
                )
            values[name] = value
        return SessionLimits(**values)

    @property
    def ttl(self) -> float:
        return float(self.ttl_s or 0.0)
