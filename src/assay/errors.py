"""Assay's exceptions. Inside scoring these become per-item statuses; at the HTTP boundary, envelopes.

Each class carries the item status it ends as (`status`: its parent's, "error" at the top, unless
noted; a test reads this tree and checks it against the classes). A scorer raises; the
engine maps the exception to a `Result` in one place (`Result.of_error`), the way httpx maps transport
errors once, so no scorer translates failures to statuses by hand.

AssayError
├── ConfigError          settings or a plugin cannot be used (raised at start-up, never per item)
│   ├── DataError            (rl_client) a data file cannot be read as training data
│   └── FinishedRunError     (rl_client) an output directory holds a finished run (`--fresh` starts anew)
├── MissingExtraError    an optional dependency is not installed; says which extra to install
├── ItemError            one item cannot be scored as given -> status "invalid"
│   ├── UnknownTaskError     no such task ("did you mean ...")
│   ├── OptionsError         unknown or ill-typed option ("did you mean ...")
│   ├── UnknownDatabase      (sql) no database by that db_id or engine
│   ├── TaskInvalid          (repo) the item cannot be a repository task
│   ├── RepoNotFound         (repo) no such repository or base commit under the repository root
│   ├── LimitsTooLarge       (sessions) limits past the server's maxima (HTTP 422)
│   └── ToolUnavailable      (sessions) a tool the item gives nothing to work on (HTTP 422)
├── BackendUnavailable   a database engine, PRM or other backend cannot serve
│   ├── EngineUnavailable    (sql) the database cannot be opened or reached
│   └── BindingsUnavailable  (sessions) the trajectory table did not answer -> HTTP 503 with Retry-After
├── BackendTimeout       a backend did not answer in time -> status "timeout"
├── QueryError           (sql) a query gave no usable result; the scorer decides what that means
├── SandboxError         (sandbox) our side of a sandbox failed (a slot crashed, bwrap missing)
│   └── EnvironmentFailed    (repo) a repository's dependency environment cannot be read or built
├── JudgeFailure         (judges) no judgement could be made
│   ├── JudgeNotConfigured   no backend or model in settings
│   ├── JudgeTimeout         the backend did not answer within `timeout_s` -> status "timeout"
│   ├── JudgeUnavailable     refused connection, or 429/5xx after every retry
│   ├── JudgeRejected        the backend refused the request (4xx other than 429)
│   ├── JudgeBadResponse     the answer is not the chat-completions format
│   └── JudgeUnparseable     the judge answered, but no score or verdict could be read
├── PrmFailure           (prm) the process reward model could not score
│   ├── PrmUnavailable       the PRM backend cannot serve (also a BackendUnavailable)
│   ├── PrmTimeout           no PRM answer in time (also a BackendTimeout) -> status "timeout"
│   └── PrmBadInput          the steps cannot be scored as given (also an ItemError) -> status "invalid"
├── QueueFullError       the bounded work queue is full -> HTTP 429 with Retry-After
├── SessionGone          (sessions) no such session, or it ended -> HTTP 404/410 `session_gone`
├── SessionsFull         (sessions) as many sessions open as allowed -> HTTP 429 with Retry-After
├── RewardUnavailable    a trainer's reward hook has no reward to give (never a made-up 0.0)
└── ClientError          the HTTP client gave up (after its retries); every client failure is one
    ├── UnreachableError     no connection to the service, after every retry
    ├── ServiceError         the service answered an error status (after retries when it was 429/5xx)
    │   ├── RequestTooLargeError even one item exceeds the service's limits (413)
    │   └── SessionGoneError     the session is not there (404) or has ended (410); `reason` says why
    ├── ResponseError        the answer does not follow the contract (not JSON, wrong result count)
    └── PayloadError         an item cannot be sent as JSON (NaN, an object that is not JSON)
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "AssayError",
    "BackendTimeout",
    "BackendUnavailable",
    "ClientError",
    "ConfigError",
    "ItemError",
    "MissingExtraError",
    "OptionsError",
    "PayloadError",
    "QueueFullError",
    "RequestTooLargeError",
    "ResponseError",
    "RewardUnavailable",
    "ServiceError",
    "SessionGoneError",
    "UnknownTaskError",
    "UnreachableError",
]


class AssayError(Exception):
    """Base of every exception Assay raises on purpose; `details` go into the item's result."""

    status: ClassVar[str] = "error"

    def __init__(self, message: str = "", **details: Any) -> None:
        super().__init__(message)
        self.details = details


class ConfigError(AssayError, ValueError):
    """The configuration cannot work (settings, a run config, a data file); the message says what to
    change."""


class MissingExtraError(AssayError, ImportError):
    """An optional dependency is missing; the message carries the exact install command."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(f"{package} is not installed; install it with: pip install 'assay[{extra}]'")
        self.package = package
        self.extra = extra


class ItemError(AssayError):
    """The item itself is malformed; scoring reports it as status "invalid" with this message."""

    status = "invalid"


class UnknownTaskError(ItemError):
    """The item names a task that is not registered."""


class OptionsError(ItemError):
    """The item's options do not validate against its task's options model."""


class BackendUnavailable(AssayError):
    """A backend the task needs (database engine, PRM, model server) cannot serve: not the policy's fault."""


class BackendTimeout(AssayError):
    """A backend did not answer within its time: our deadline, so status "timeout"."""

    status = "timeout"


class QueueFullError(AssayError):
    """More items are pending than the queue admits; retry after `retry_after_s`."""

    def __init__(self, pending: int, limit: int, retry_after_s: float) -> None:
        super().__init__(f"work queue full: {pending} items pending, limit {limit}")
        self.retry_after_s = retry_after_s


class RewardUnavailable(AssayError, RuntimeError):
    """A trainer's reward hook has no reward to give: Assay could not score the item (timeout, error or
    invalid) or refused the batch. Raised instead of a made-up 0.0."""


class ClientError(AssayError):
    """The Assay service could not be reached or kept failing after retries."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class UnreachableError(ClientError):
    """No connection to the service (refused, reset, timed out), after every retry."""


class ServiceError(ClientError):
    """The service answered an error status; `status_code` says which."""


class RequestTooLargeError(ServiceError):
    """A single item exceeds the service's body limit: splitting cannot help."""


class SessionGoneError(ServiceError):
    """A session call found the session gone (envelope type session_gone): 404 for an id the server
    never knew, 410 for one that ended; `reason` is the server's (expired, deleted, max_steps, ...)."""

    def __init__(self, message: str, status_code: int | None, session_id: str, reason: str) -> None:
        super().__init__(message, status_code)
        self.session_id, self.reason = session_id, reason


class ResponseError(ClientError):
    """The service's answer does not follow the contract."""


class PayloadError(ClientError, ValueError):
    """An item cannot be encoded as JSON (NaN or infinity, a value JSON has no type for)."""
