"""Clock times: "20:34", "20:34:00", "8:34 PM", "8:34 p.m.", "08:34", "20h34".

A time is never a ratio (1:00 is not 12:00, 3:15 is not 1:5). Seconds left out are zero ("20:34" is
"20:34:00"). A time says which half of the day it is in when it has a suffix ("8:34 PM" is 20:34), an
hour of 13-23 or 0, or a leading zero ("08:34"); otherwise ("8:34") only its face is known. The rule
(`clock` in `details`):
- a gold that says its half of the day is answered only by the same time of day ("8:34 PM" by "20:34" or
  "8:34 p.m.", never by a bare "8:34": an answer that leaves the half open would be right either way);
- a gold that does not ("8:34") is answered by any time with that face ("8:34", "08:34", "8:34 AM",
  "8:34 PM"), never by another face ("20:34" reads 8:34 only on a 12-hour dial the gold did not use).
An hour above 23 or minutes or seconds above 59 are no time: such an answer is text and equals nothing
but the same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CLOCK_RE = re.compile(r"^(\d{1,2})(?::|\s*h\s*)(\d{2})(?::(\d{2}))?\s*((?i:[ap]\.?\s?m\.?))?$")


@dataclass(frozen=True)
class Clock:
    """A time of day: `face` is (hour, minute, second) as written; `day` the 24-hour time when the writing
    says which half of the day it is (None when it does not)."""

    face: tuple[int, int, int]
    day: tuple[int, int, int] | None
    raw: str = ""

    def describe(self) -> str:
        if self.day is not None:
            return "time {:02d}:{:02d}:{:02d}".format(*self.day)
        return "time {}:{:02d}:{:02d} (half of the day not given)".format(*self.face)


def read_clock(text: str) -> Clock | None:
    """The time `text` writes (already `clean`ed), or None if it is not a valid clock time."""
    match = _CLOCK_RE.match(text.strip())
    if match is None:
        return None
    hour, minute = int(match.group(1)), int(match.group(2))
    second = int(match.group(3) or 0)
    suffix = (match.group(4) or "").replace(".", "").replace(" ", "").lower()
    if minute > 59 or second > 59 or hour > 23 or (suffix and not 1 <= hour <= 12):
        return None
    face = (hour, minute, second)  # as written: "20:34" has the face 20:34, never 8:34
    if suffix:
        return Clock(face, ((hour % 12) + (12 if suffix == "pm" else 0), minute, second), text)
    if hour >= 13 or hour == 0 or match.group(1).startswith("0"):
        return Clock(face, (hour, minute, second), text)
    return Clock(face, None, text)


def same_time(gold: Clock, answer: Clock) -> tuple[bool, str]:
    """Whether `answer` names the gold's time (see the module docstring), and the rule in words."""
    if gold.day is not None:
        if answer.day is None:
            return False, "clock: the answer leaves open which half of the day the gold's time is in"
        ok = answer.day == gold.day
        return ok, f"clock: {answer.describe()} {'=' if ok else '!='} {gold.describe()}"
    ok = answer.face == gold.face
    return ok, f"clock: face {answer.describe()} {'=' if ok else '!='} {gold.describe()}"
