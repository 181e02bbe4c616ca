""" "Did you mean" hints, shared by the task registry and options validation."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A suffix for an error message: ' (did you mean "x"?)', or '' when nothing is close."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""
