"""`POST /run_code`, compatible with SandboxFusion's endpoint of the same name.

verl's sandbox reward (and other SandboxFusion clients) can point at Assay unchanged: same request
fields (`code`, `language`, `stdin`, `compile_timeout`, `run_timeout`, `memory_limit_MB`, `files`,
`fetch_files`) and response fields (`status`: Success/Failed/SandboxError, `message`, `compile_result`,
`run_result`: {status: Finished/TimeLimitExceeded/Error, execution_time, return_code, stdout, stderr},
`executor_pod_name`, `files`). Programs run in the code scorer's sandbox pool. `files`/`fetch_files`
must be empty (no file transfer yet); a non-empty one is answered `Failed` with a message. As in
SandboxFusion, `run_timeout` and `compile_timeout` are wall-clock seconds, and `null` limits (verl sends
them) mean the server's defaults. An unknown language is HTTP 422 naming the supported ones.

Overload: SandboxFusion's clients give a request `compile_timeout + run_timeout + 10` seconds (verl's
`API_TIMEOUT`), retry only on HTTP 504 (verl: 3 attempts, 1 s and 2 s apart) and score any other error,
a 429 included, as failed tests. So a request waits for a sandbox slot (through the engine's fair gate,
shared with code items) at most `SLOT_WAIT_S`, inside the 10 s the client allows beyond the program's
own limits, and when no slot frees in time, or the queue is full, it is answered 504 with Retry-After
and the error envelope ("sandbox busy"), which those clients retry: never a made-up "Failed".
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from assay.api.body import BoundedRoute
from assay.api.codes import Refusal
from assay.api.envelope import refusal_response
from assay.api.protocol import POST_ERRORS, error_responses
from assay.api.state import admitted, engine_of
from assay.engine.scheduling import SlotWaitTimeout
from assay.errors import QueueFullError
from assay.sandbox import TIME_LIMIT, Execution, Program, RunOutcome, SandboxError, lookup
from assay.sandbox.languages import language_names, language_pattern
from assay.types import find_surrogate

router = APIRouter(tags=["compat"], route_class=BoundedRoute)

SLOT_WAIT_S = 8.0  # longest wait for a slot: below the 10 s SandboxFusion clients add to the limits
_DEFAULT_TIMEOUT_S = 10.0  # SandboxFusion's default compile and run timeouts


class RunCodeRequest(BaseModel):
    code: str
    language: str = Field(
        "python",
        description="A language name or alias, in any case; unknown: 422 naming the supported ones.",
        json_schema_extra={"pattern": language_pattern()},
    )
    stdin: str | None = None
    compile_timeout: float | None = Field(_DEFAULT_TIMEOUT_S, gt=0, le=120, description="null: 10 s.")
    run_timeout: float | None = Field(_DEFAULT_TIMEOUT_S, gt=0, le=120, description="null: 10 s.")
    memory_limit_MB: int | None = Field(
        -1, ge=-1, le=16384, description="MiB, at most 16384; -1, 0 or null: the server's default."
    )
    files: dict[str, str | None] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)

    @field_validator("memory_limit_MB", "compile_timeout", "run_timeout", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool):  # JSON false would otherwise pass as 0
            raise ValueError(f"{info.field_name} must be a number, not a boolean")
        return value

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        # Checked with the rest of the body, as the schema's pattern says (schemathesis, issue 28).
        if find_surrogate(value, "language"):  # named without echoing it: it cannot be encoded
            raise ValueError("language holds a lone surrogate, which is not valid Unicode")
        if lookup(value) is None:
            raise ValueError(f'unknown language "{value}"; supported: {", ".join(language_names())}')
        return value

    @model_validator(mode="after")
    def _valid_unicode(self) -> RunCodeRequest:
        for name in type(self).model_fields:
            found = find_surrogate(getattr(self, name), name)
            if found:
                raise ValueError(f"{found} holds a lone surrogate, which is not valid Unicode")
        return self


class CommandRunResult(BaseModel):
    status: Literal["Finished", "Error", "TimeLimitExceeded"]
    execution_time: float | None = None
    return_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None


class RunCodeResponse(BaseModel):
    status: Literal["Success", "Failed", "SandboxError"]
    message: str = ""
    compile_result: CommandRunResult | None = None
    run_result: CommandRunResult | None = None
    executor_pod_name: str | None = None
    files: dict[str, str] = Field(default_factory=dict)


def _command(outcome: RunOutcome) -> CommandRunResult:
    return CommandRunResult(
        status="TimeLimitExceeded" if outcome.status == TIME_LIMIT else "Finished",
        execution_time=outcome.wall_s,
        return_code=outcome.exit_code,
        stdout=outcome.stdout.decode("utf-8", "replace"),
        stderr=outcome.stderr.decode("utf-8", "replace"),
    )


def _response(execution: Execution) -> RunCodeResponse:
    compile_result = _command(execution.compile) if execution.compile is not None else None
    if execution.compile_error is not None:
        if compile_result is None:  # a cached compile error
            compile_result = CommandRunResult(
                status="Finished", return_code=1, stderr=execution.compile_error
            )
        return RunCodeResponse(status="Failed", message="compile error", compile_result=compile_result)
    runs = execution.runs or []
    run_result = _command(runs[0]) if runs else None
    ok = run_result is not None and run_result.status == "Finished" and run_result.return_code == 0
    return RunCodeResponse(
        status="Success" if ok else "Failed",
        compile_result=compile_result,
        run_result=run_result,
        message="" if ok else (runs[0].status if runs else "not run"),
    )


def _busy(reason: str, retry_after_s: float) -> JSONResponse:
    """504 with Retry-After: the one answer SandboxFusion's clients (verl) retry."""
    retry = str(max(1, round(retry_after_s)))
    return refusal_response(
        Refusal.BUSY, f"sandbox busy: {reason}; retry after {retry}s", {"Retry-After": retry}
    )


_ERRORS = {**POST_ERRORS, **error_responses(Refusal.BUSY)}


@router.post("/run_code", response_model=RunCodeResponse, responses=_ERRORS)
async def run_code(body: RunCodeRequest, request: Request) -> RunCodeResponse | JSONResponse:
    """Compile and run one program on one stdin, SandboxFusion style (`run_timeout` is wall-clock)."""
    if body.files or body.fetch_files:
        return RunCodeResponse(status="Failed", message="files and fetch_files are not supported by Assay")
    language = lookup(body.language)
    assert language is not None  # the body's validator refused any other
    if not language.available():
        return RunCodeResponse(status="Failed", message=f"language {language.name} is not installed here")
    engine = engine_of(request)
    code_settings = engine.settings.code
    program = Program(
        language=language.name,
        source=body.code,
        stdin=(body.stdin or "").encode(),
        wall_s=body.run_timeout or _DEFAULT_TIMEOUT_S,
        memory_mb=body.memory_limit_MB if (body.memory_limit_MB or 0) > 0 else None,
        compile_wall_s=body.compile_timeout or _DEFAULT_TIMEOUT_S,
    )
    # Through the engine's fair sandbox gate, so /run_code and code items share slots fairly.
    work = engine.run_program(
        program, wait_s=min(SLOT_WAIT_S, code_settings.wait_s), max_waiting=code_settings.max_waiting
    )
    try:
        execution = await admitted(request, 1, work, "a program")
    except QueueFullError as exc:
        return _busy(str(exc), exc.retry_after_s)
    except SlotWaitTimeout as exc:  # no slot in time, or too many already waiting (GateFull)
        return _busy(str(exc), engine.settings.retry_after_s)
    except SandboxError as exc:
        return RunCodeResponse(status="SandboxError", message=str(exc))
    return _response(execution)
