"""Why a judgement could not be made, and how that becomes a status (never a score).

    JudgeFailure (AssayError)
    ├── JudgeNotConfigured   no backend or model in settings: the reason names the setting to set
    ├── JudgeTimeout         the backend did not answer within `timeout_s`          -> status "timeout"
    ├── JudgeUnavailable     refused connection, or 429/5xx after every retry       -> status "error"
    ├── JudgeRejected        the backend refused the request (4xx other than 429)   -> status "error"
    ├── JudgeBadResponse     the answer is not the chat-completions format          -> status "error"
    └── JudgeUnparseable     the judge answered, but no score/verdict could be read -> status "error"

Reward servers that score a judge's 429 or timeout as 0 silently bias training; here each of these ends
as `timeout` or `error` with the reason, and the raw judge text where there is one.
"""

from __future__ import annotations

from typing import Any

from assay.errors import AssayError
from assay.types import Result


class JudgeFailure(AssayError):
    """Base of every judge failure; `details` go into the result (never secrets)."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


class JudgeNotConfigured(JudgeFailure):
    """No judge backend is configured."""


class JudgeTimeout(JudgeFailure):
    """The judge backend did not answer in time: our deadline, so status "timeout"."""

    status = "timeout"


class JudgeUnavailable(JudgeFailure):
    """The judge backend could not be reached or kept answering 429/5xx."""


class JudgeRejected(JudgeFailure):
    """The judge backend refused the request (bad key, unknown model, bad parameters)."""


class JudgeBadResponse(JudgeFailure):
    """The judge backend answered something that is not a chat completion."""


class JudgeUnparseable(JudgeFailure):
    """The judge's text holds no score or verdict; `details["raw"]` has the text."""


def failure_result(exc: JudgeFailure, **details: Any) -> Result:
    """The status a failure ends as, its class's (`timeout` for a slow backend, `error` for everything
    else), through the one mapping of `assay.errors`."""
    result = Result.of_error(exc)
    return result.model_copy(update={"details": {**result.details, **details}})
