"""`POST /run_code`, compatible with SandboxFusion's endpoint of the same name.

verl's sandbox reward (and other SandboxFusion clients) can point at Assay unchanged: same request
fields (`code`, `language`, `stdin`, `compile_timeout`, `run_timeout`, `memory_limit_MB`, `files`,
`fetch_files`) and response fields (`status`: Success/Failed/SandboxError, `message`, `compile_result`,
`run_result`: {status: Finished/TimeLimitExceeded/Error, execution_time, return_code, stdout, stderr},
`executor_pod_name`, `files`). Programs run in the code scorer's sandbox pool. `files`/`fetch_files`
must be empty (no file transfer yet); a non-empty one is answered `Failed` with a message. `null`
limits (verl sends them) mean the server's defaults, as on SandboxFusion's server.

Overload: SandboxFusion's clients give a request `compile_timeout + run_timeout + 10` seconds (verl's
`API_TIMEOUT`), retry only on HTTP 504 (verl: 3 attempts, 1 s and 2 s apart) and score any other error,
a 429 included, as failed tests. So a request waits for a sandbox slot at most `SLOT_WAIT_S` (inside the
10 s the client allows beyond the program's own limits), and when no slot frees in time, or the queue is
full, it is answered 504 with Retry-After, which those clients retry: never a made-up "Failed".
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from assay.api.envelope import error_response
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

router = APIRouter(tags=["compat"])

SLOT_WAIT_S = 8.0  # longest wait for a slot: below the 10 s SandboxFusion clients add to the limits
_DEFAULT_TIMEOUT_S = 10.0  # SandboxFusion's default compile and run timeouts


class RunCodeRequest(BaseModel):
    code: str
    language: str = "python"
    stdin: str | None = None
    compile_timeout: float | None = Field(_DEFAULT_TIMEOUT_S, gt=0, le=120, description="null: 10 s.")
    run_timeout: float | None = Field(_DEFAULT_TIMEOUT_S, gt=0, le=120, description="null: 10 s.")
    memory_limit_MB: int | None = Field(-1, description="-1 or null: the server's default.")
    files: dict[str, str | None] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)


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


def _limits(body: RunCodeRequest, code_settings: Any) -> tuple[Limits, Limits]:
    """Run and compile limits; null or non-positive values fall back to the server's defaults."""
    run_s = body.run_timeout or _DEFAULT_TIMEOUT_S
    compile_s = body.compile_timeout or _DEFAULT_TIMEOUT_S
    memory = body.memory_limit_MB
    limits = Limits(
        time_s=run_s,
        wall_s=run_s + 1.0,
        memory_mb=memory if memory is not None and memory > 0 else code_settings.memory_mb,
        stdout_bytes=code_settings.max_output_bytes,
        processes=code_settings.processes,
    )
    compile_limits = Limits(
        time_s=compile_s,
        wall_s=compile_s * 2 + 1,
        memory_mb=code_settings.compile_memory_mb,
        address_space=False,
        processes=code_settings.processes,
    )
    return limits, compile_limits


def _busy(reason: str, retry_after_s: float) -> JSONResponse:
    """504 with Retry-After: the one answer SandboxFusion's clients (verl) retry."""
    retry = str(max(1, round(retry_after_s)))
    return error_response(504, f"{reason}; retry after {retry}s", {"Retry-After": retry})


@router.post(
    "/run_code",
    response_model=RunCodeResponse,
    responses={504: {"description": "No sandbox slot within the wait; retry (SandboxFusion clients do)."}},
)
async def run_code(body: RunCodeRequest, request: Request) -> RunCodeResponse | JSONResponse:
    """Compile and run one program on one stdin, SandboxFusion style."""
    if body.files or body.fetch_files:
        return RunCodeResponse(status="Failed", message="files and fetch_files are not supported by Assay")
    language = lookup(body.language)
    if language is None or not language.available():
        return RunCodeResponse(status="Failed", message=f"unsupported language: {body.language}")
    engine = request.app.state.engine
    scorer: Any = engine.scorer("code")
    code_settings = engine.settings.code
    limits, compile_limits = _limits(body, code_settings)
    test = TestInput(stdin=(body.stdin or "").encode())
    try:
        engine.admit(1)
    except QueueFullError as exc:
        return _busy(str(exc), exc.retry_after_s)
    try:
        execution = await asyncio.to_thread(
            scorer.executor.execute,
            language,
            body.code,
            [test],
            limits,
            None,
            min(SLOT_WAIT_S, code_settings.wait_s),
            compile_limits,
        )
    except SandboxBusy as exc:
        return _busy(f"sandbox busy: {exc}", engine.settings.retry_after_s)
    except SandboxError as exc:
        return RunCodeResponse(status="SandboxError", message=str(exc))
    finally:
        engine.release(1)
    return _response(execution)
