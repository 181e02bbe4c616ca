"""`POST /run_code`, compatible with SandboxFusion's endpoint of the same name.

verl's sandbox reward (and other SandboxFusion clients) can point at Assay unchanged: same request
fields (`code`, `language`, `stdin`, `compile_timeout`, `run_timeout`, `memory_limit_MB`, `files`,
`fetch_files`) and response fields (`status`: Success/Failed/SandboxError, `message`, `compile_result`,
`run_result`: {status: Finished/TimeLimitExceeded/Error, execution_time, return_code, stdout, stderr},
`executor_pod_name`, `files`). Programs run in the code scorer's sandbox pool. `files`/`fetch_files`
must be empty (no file transfer yet); a non-empty one is answered `Failed` with a message. Overload
(every slot busy and the wait queue full) is HTTP 429 with Retry-After, like the rest of the API.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, field_validator, model_validator

from assay.api.protocol import POST_ERRORS
from assay.api.state import until_disconnected
from assay.errors import QueueFullError
from assay.sandbox import (
    TIME_LIMIT,
    Execution,
    Limits,
    RunOutcome,
    SandboxBusy,
    SandboxError,
    TestInput,
    lookup,
)
from assay.scheduling import SlotWaitTimeout
from assay.types import find_surrogate

router = APIRouter(tags=["compat"])


class RunCodeRequest(BaseModel):
    code: str
    language: str = "python"
    stdin: str | None = None
    compile_timeout: float = Field(10.0, gt=0, le=120)
    run_timeout: float = Field(10.0, gt=0, le=120)
    memory_limit_MB: int | None = Field(
        -1, ge=-1, le=16384, description="MiB, at most 16384; -1, 0 or null: the server's default."
    )
    files: dict[str, str | None] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)

    @field_validator("memory_limit_MB", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):  # JSON false would otherwise pass as 0
            raise ValueError("memory_limit_MB must be a number of MiB, not a boolean")
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


@router.post("/run_code", response_model=RunCodeResponse, responses=POST_ERRORS)
async def run_code(body: RunCodeRequest, request: Request) -> RunCodeResponse:
    """Compile and run one program on one stdin, SandboxFusion style."""
    if body.files or body.fetch_files:
        return RunCodeResponse(status="Failed", message="files and fetch_files are not supported by Assay")
    language = lookup(body.language)
    if language is None or not language.available():
        return RunCodeResponse(status="Failed", message=f"unsupported language: {body.language}")
    engine = request.app.state.engine
    scorer: Any = engine.scorer("code")
    code_settings = engine.settings.code
    limits = Limits(
        time_s=body.run_timeout,
        wall_s=body.run_timeout + 1.0,
        memory_mb=body.memory_limit_MB
        if body.memory_limit_MB is not None and body.memory_limit_MB > 0
        else code_settings.memory_mb,
        stdout_bytes=code_settings.max_output_bytes,
        processes=code_settings.processes,
    )
    compile_limits = Limits(
        time_s=body.compile_timeout,
        wall_s=body.compile_timeout * 2 + 1,
        memory_mb=code_settings.compile_memory_mb,
        address_space=False,
        processes=code_settings.processes,
    )
    test = TestInput(stdin=(body.stdin or "").encode())
    if engine.crowded("sandbox", code_settings.max_waiting):  # SandboxFusion clients expect a 429
        raise QueueFullError(engine.pending, engine.settings.queue_size, engine.settings.retry_after_s)
    engine.admit(1)
    try:
        # Through the engine's fair sandbox gate, so /run_code and code items share slots fairly.
        execution = await until_disconnected(
            request,
            engine.run_in_slot(
                "sandbox",
                object(),
                partial(
                    scorer.executor.execute,
                    language,
                    body.code,
                    [test],
                    limits,
                    None,
                    code_settings.deadline_s,
                    compile_limits,
                ),
            ),
        )
    except (SandboxBusy, SlotWaitTimeout) as exc:
        raise QueueFullError(
            engine.pending, engine.settings.queue_size, engine.settings.retry_after_s
        ) from exc
    except SandboxError as exc:
        return RunCodeResponse(status="SandboxError", message=str(exc))
    finally:
        engine.release(1)
    return _response(execution)
