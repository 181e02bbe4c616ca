"""The trainer's settings, one frozen dataclass per stage, validated with messages that say what to change.

The dataclasses double as pydantic schemas (`runs/config.py` validates YAML/TOML against them): unknown
keys are refused, strings from `--set` are coerced to the field's type, and each `__post_init__` check
becomes a validation error at its dotted path.

Defaults follow DAPO (clip 0.2 / 0.28, token-level loss, dynamic sampling) and what we measured on the
CPU demo model: RL learning rate 1e-4..3e-4 worked (1e-3 collapsed), one optimiser pass per batch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict

Aggregation = Literal["token", "sequence", "dr_grpo"]
Rollout = Literal["group", "tree"]
TreeMethod = Literal["treerl", "treerpo", "treepo"]
Branching = Literal["segment", "entropy"]


def _need(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


@dataclass(frozen=True)
class GenerateConfig:
    """Generate: G responses per prompt."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    group_size: int = 8
    temperature: float = 1.0
    max_new_tokens: int = 64
    # XRPO-style hint: when a whole group fails, resample it once with the first `hint_fraction` of the
    # reference in the prompt. 0 disables it.
    hint_fraction: float = 0.0
    hint_template: str = "{prompt}{hint}"
    chunk_prompts: int = 16  # prompts generated per chunk; the reward call of a chunk overlaps the next

    def __post_init__(self) -> None:
        _need(self.group_size >= 2, "group_size must be at least 2 (advantages are relative to the group)")
        _need(self.temperature > 0, "temperature must be positive for RL sampling (0 is greedy)")
        _need(self.max_new_tokens > 0, "max_new_tokens must be positive")
        _need(0.0 <= self.hint_fraction < 1.0, "hint_fraction must be in [0, 1): 0 disables hints")
        _need(self.chunk_prompts > 0, "chunk_prompts must be positive")


@dataclass(frozen=True)
class ControlConfig:
    """Control: which groups reach the loss."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    prompts_per_step: int = 32
    dynamic_sampling: bool = True  # DAPO: drop groups whose raw correctness is all equal
    max_rounds: int = 3  # generation rounds per step while filling the batch
    oversample: float = 1.0  # prompts drawn in a refill round per missing group
    overlong_filter: bool = False  # DAPO: truncated responses get zero loss weight
    overlong_penalty: bool = False  # DAPO soft overlong punishment on the shaped reward
    overlong_cache: int = 4  # tokens before max_new_tokens where the soft punishment starts
    overlong_factor: float = 1.0
    adaptive_group: bool = False  # more samples for prompts near 50% success
    adaptive_extra: int = 4
    skip_solved: bool = False  # GRESO: skip prompts that were all-correct recently
    skip_window: int = 10  # steps a solved prompt stays likely to be skipped
    skip_probability: float = 0.9
    # APRIL partial rollouts: start `partial_overprovision` x the groups asked for, generate in segments
    # of `partial_segment` tokens, stop once enough groups are complete and resume the rest next step.
    partial_rollouts: bool = False
    partial_overprovision: float = 1.5
    partial_segment: int = 0  # 0: a quarter of max_new_tokens

    def __post_init__(self) -> None:
        _need(self.prompts_per_step > 0, "prompts_per_step must be positive")
        _need(self.partial_overprovision >= 1.0, "partial_overprovision must be >= 1.0")
        _need(self.partial_segment >= 0, "partial_segment must be >= 0 (0: a quarter of max_new_tokens)")
        _need(self.max_rounds >= 1, "max_rounds must be at least 1")
        _need(self.oversample >= 1.0, "oversample must be >= 1.0")
        _need(self.overlong_cache >= 0, "overlong_cache must be >= 0")
        _need(self.adaptive_extra >= 0, "adaptive_extra must be >= 0")
        _need(0.0 <= self.skip_probability <= 1.0, "skip_probability must be in [0, 1]")


@dataclass(frozen=True)
class ReplayConfig:
    """Replay: scored groups kept with the policy version that made them."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    capacity: int = 512  # groups
    max_staleness: int = 4  # a group older than this many policy versions is never used
    inject_correct: bool = False  # AR3PO: put a cached correct response into an all-wrong group
    fill_batch: bool = False  # top the batch up from the buffer when generation rounds run out

    def __post_init__(self) -> None:
        _need(self.capacity >= 0, "capacity must be >= 0")
        _need(self.max_staleness >= 0, "max_staleness must be >= 0")


@dataclass(frozen=True)
class LossConfig:
    """Loss: group-relative advantages and a clipped surrogate."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    aggregation: Aggregation = "token"
    scale_std: bool = True  # GRPO divides by the group's std; Dr. GRPO does not
    clip_low: float = 0.2
    clip_high: float = 0.28  # DAPO clip-higher
    kl_coef: float = 0.0  # > 0 keeps a frozen reference copy of the initial policy
    max_is_ratio: float = 2.0  # cap on the importance weight of off-policy (replayed) samples
    # The gradient coefficient of a sample: "group" (GRPO: its reward normalised within its group) or
    # "correct" (rejection fine-tuning, `algorithm: rft`: 1 for a correct sample, 0 otherwise, STaR's).
    coefficient: str = "group"

    def __post_init__(self) -> None:
        _need(
            self.aggregation in ("token", "sequence", "dr_grpo"),
            f"aggregation must be token, sequence or dr_grpo, got {self.aggregation!r}",
        )
        _need(0 < self.clip_low < 1 and self.clip_high > 0, "clip_low must be in (0, 1), clip_high > 0")
        _need(self.kl_coef >= 0, "kl_coef must be >= 0")
        _need(self.max_is_ratio >= 1.0, "max_is_ratio must be >= 1")
        _need(
            self.coefficient in ("group", "correct"),
            f"coefficient must be group or correct, got {self.coefficient!r}",
        )


CallFormat = Literal["tags", "hermes"]


@dataclass(frozen=True)
class ToolsConfig:
    """Multi-turn tool use (issue 26): the policy calls Assay session tools while it generates.

    `call_format` "tags": a call is `<python>code</python>` (or `<sql>query</sql>`, `<run_tests>code
    </run_tests>`); generation stops when the closing tag is written, the session runs the call, and its
    observation (`observation_template`) is appended before the policy goes on. "hermes": the chat
    template's markup (Hermes, Qwen2.5, Qwen3), `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`,
    with the observation shown as the template shows a tool message (see `tool_calls.py`). Empty
    `tools`: one completion per prompt, as without this section."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    tools: tuple[str, ...] = ()
    max_turns: int = 4  # generation segments per rollout; the last one cannot call a tool
    max_total_tokens: int = 0  # response plus observations; 0: generate.max_new_tokens x max_turns
    call_format: CallFormat = "tags"
    observation_template: str = "<output>\n{observation}</output>\n"
    max_observation_tokens: int = 256  # an observation is cut to this many tokens (a flood guard)
    limits: dict[str, float] = field(default_factory=dict)  # session limits, e.g. {"max_steps": 8}

    def __post_init__(self) -> None:
        _need(self.max_turns >= 1, "max_turns must be at least 1")
        _need(self.max_total_tokens >= 0, "max_total_tokens must be >= 0 (0: max_new_tokens x max_turns)")
        _need(
            self.call_format in ("tags", "hermes"),
            f"call_format must be tags or hermes, got {self.call_format!r}",
        )
        _need("{observation}" in self.observation_template, "observation_template needs {observation}")
        _need(self.max_observation_tokens > 0, "max_observation_tokens must be positive")
        _need(len(set(self.tools)) == len(self.tools), "tools must not repeat")


@dataclass(frozen=True)
class TreeConfig:
    """Tree rollouts (`rollout: tree`, issue 41): one prompt's responses share their prefixes.

    `branching` "segment" (TreePO): `roots` chains start from the prompt; every node generates
    `segment_tokens` tokens and forks into `fan_out` children, for `depth` levels, until each chain owns one
    of `generate.group_size` leaves; then it runs on to the budget (`generate.max_new_tokens`). "entropy"
    (TreeRL's EPTree): `roots` whole chains, then `iterations` times each leaf's `forks` most uncertain
    tokens are forked into `fan_out` new chains (leaves: roots x (1 + forks x fan_out)^iterations).
    `answer_cue` (non-empty): a leaf that used the whole budget without ending gets the cue appended and
    `answer_tokens` more tokens to answer in. The server credits the nodes by `method` (docs/trees.md)."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    method: TreeMethod = "treerl"  # measured best of the three on the demo (docs/trees.md)
    branching: Branching = "segment"
    roots: int = 2
    fan_out: int = 2
    segment_tokens: int = 1
    depth: int = 3
    forks: int = 1
    iterations: int = 1
    answer_cue: str = ""
    answer_tokens: int = 8
    # TreePO's pruning of dead branches: a child that ended exactly as an ended sibling did is dropped.
    # Off by default: on the demo, where short answers repeat often, it under-credits the likeliest
    # (often right) answer, and greedy accuracy fell (benchmarks/rollouts.py; docs/trees.md).
    prune_duplicates: bool = False

    def __post_init__(self) -> None:
        _need(
            self.method in ("treerl", "treerpo", "treepo"),
            f"tree.method must be treerl, treerpo or treepo, got {self.method!r}",
        )
        _need(
            self.branching in ("segment", "entropy"),
            f"tree.branching must be segment (TreePO) or entropy (TreeRL), got {self.branching!r}",
        )
        _need(self.roots >= 1, "tree.roots must be at least 1")
        _need(self.fan_out >= 2, "tree.fan_out must be at least 2 (a fork with one child shares nothing)")
        _need(self.segment_tokens >= 1, "tree.segment_tokens must be at least 1")
        _need(self.depth >= 1, "tree.depth must be at least 1")
        _need(self.forks >= 1, "tree.forks must be at least 1")
        _need(self.iterations >= 1, "tree.iterations must be at least 1")
        _need(self.answer_tokens >= 1, "tree.answer_tokens must be at least 1")


SHAPING_METHODS = ("none", "shorter_better", "adapt_think", "s_grpo", "ro_recomp")
SERVER_SHAPED = ("shorter_better", "adapt_think", "s_grpo")  # the server computes `shaped_reward`
ISRatio = Literal["token_mean", "sequence"]


@dataclass(frozen=True)
class ShapingConfig:
    """Length control (issue 40, docs/length-control.md): the server turns each group's verdicts and
    lengths into `shaped_reward` (POST /v1/groups' `shaping`), and the advantages are computed from it.

    "shorter_better" (Yi et al. 2025): alpha x correct - beta x |length - SOL|, SOL the length of the group's
    shortest correct response (its mean length when none is correct); the length sent is the completion's
    token count. "s_grpo" (Dai et al. 2025): each group is one path cut at group_size - 1 exits inside its
    thinking (`serial.py`; before `thinking_end`), each exit forced with `exit_cue` and answered in
    `exit_tokens`; the k-th correct exit earns decay^(k-1), a wrong one 0. "ro_recomp" (Li et al. 2025,
    `recompose.py`): raw rewards, but each step trains on its short-correct and long-incorrect responses, the
    rest replayed every `compensation_every` steps. "adapt_think" (Zhang et al. 2025, `adapt_think.py`):
    `nothinking_ratio` of each group is forced to open with `nothinking_prefix`, the server pays accuracy -
    the reference accuracy (`reference_accuracy` or a solve-rate file by name) + delta x NoThinking, and the
    loss importance-samples the first token against the 0.5/0.5 mixture. "none": the raw reward. Dynamic
    sampling still filters on raw correctness."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    method: str = "none"
    alpha: float = 2.0  # ShorterBetter's released code
    beta: float = 0.001
    decay: float = 0.5  # S-GRPO: 1/2^(k-1) for the k-th correct exit
    # S-GRPO's cue is "Time is limited, stop thinking and start answering.\n</think>\n\n"; empty: the
    # exit just answers from the cut (a model without a thinking block, like the demo's)
    exit_cue: str = ""
    exit_tokens: int = 8  # an exit's answer budget
    # S-GRPO cuts only inside the thinking: the path's tokens before its first `thinking_end` (the whole
    # path when it has none, or when the tokenizer cannot spell it)
    thinking_end: str = "</think>"
    priority_fraction: float = 0.5  # RoRecomp: the share of each group's correct (incorrect) responses kept
    compensation_every: int = 4  # RoRecomp: every k-th step adds a compensation batch; 0: never
    delta: float = 0.05  # AdaptThink: the NoThinking bonus (the paper's and released code's)
    # AdaptThink's reference accuracy per prompt: one number for every prompt, or a solve-rate file by name
    # (`assay validate --policy -o NAME`, in the server's ASSAY_SOLVE_RATES), looked up by problem id
    reference_accuracy: float | None = None
    reference_accuracy_file: str = ""
    nothinking_ratio: float = 0.5  # AdaptThink: the share of each group forced to open with the prefix
    nothinking_prefix: str = "</think>"  # forced as the response's first token(s): an empty thinking block
    # "": the thinking half is sampled as it comes; the released code forces a start word ("Alright")
    thinking_start: str = ""
    nothinking_max_length: float | None = None  # the server's NoThinking cap (its default: 2048 tokens)
    # the importance ratio: "token_mean" (the released code: exp of the mean per-token log ratio) or
    # "sequence" (the paper's pi_theta(y|x) / pi_IS(y|x))
    is_ratio: ISRatio = "token_mean"

    def __post_init__(self) -> None:
        _need(
            self.method in SHAPING_METHODS,
            f"shaping.method must be one of {', '.join(SHAPING_METHODS)}, got {self.method!r}",
        )
        _need(self.alpha >= 0 and self.beta >= 0, "shaping.alpha and shaping.beta must be >= 0")
        _need(0 < self.decay <= 1, "shaping.decay must be in (0, 1]")
        _need(self.exit_tokens >= 1, "shaping.exit_tokens must be at least 1")
        _need(0 < self.priority_fraction <= 1, "shaping.priority_fraction must be in (0, 1]")
        _need(self.compensation_every >= 0, "shaping.compensation_every must be >= 0 (0: never)")
        _need(self.delta >= 0, "shaping.delta must be >= 0")
        _need(
            self.reference_accuracy is None or 0 <= self.reference_accuracy <= 1,
            "shaping.reference_accuracy must be in [0, 1]",
        )
        _need(0 < self.nothinking_ratio < 1, "shaping.nothinking_ratio must be in (0, 1)")
        _need(bool(self.nothinking_prefix), "shaping.nothinking_prefix must not be empty")
        _need(
            self.nothinking_max_length is None or self.nothinking_max_length > 0,
            "shaping.nothinking_max_length must be positive",
        )
        _need(
            self.is_ratio in ("token_mean", "sequence"),
            f"shaping.is_ratio must be token_mean or sequence, got {self.is_ratio!r}",
        )

    @property
    def on(self) -> bool:
        return self.method != "none"

    @property
    def server(self) -> bool:
        """The server shapes the rewards (the advantages start from `shaped_reward`)."""
        return self.method in SERVER_SHAPED

    def wire(self) -> dict[str, Any] | None:
        """The group's `shaping` option for POST /v1/groups; None when shaping is off."""
        if self.method == "shorter_better":
            return {"method": self.method, "alpha": self.alpha, "beta": self.beta}
        if self.method == "s_grpo":
            return {"method": self.method, "decay": self.decay}
        if self.method == "adapt_think":
            wire: dict[str, Any] = {"method": self.method, "delta": self.delta}
            if self.reference_accuracy_file:
                wire["reference_accuracy_file"] = self.reference_accuracy_file
            else:
                wire["reference_accuracy"] = self.reference_accuracy
            if self.nothinking_max_length is not None:
                wire["nothinking_max_length"] = self.nothinking_max_length
            return wire
        return None


@dataclass(frozen=True)
class TrainConfig:
    """Everything one run needs besides the model, the backend, the data and the reward source."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    steps: int = 100
    lr: float = 2e-4
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    micro_batch: int = 512  # samples per forward/backward pass
    seed: int = 0
    task: str = "math"
    eval_every: int = 0  # steps between dev evaluations (0: only at the end, by the caller)
    generate: GenerateConfig = field(default_factory=GenerateConfig)
    control: ControlConfig = field(default_factory=ControlConfig)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    # "group": G i.i.d. responses per prompt; "tree": responses sampled as a tree (`tree`, issue 41)
    rollout: Rollout = "group"
    tree: TreeConfig = field(default_factory=TreeConfig)
    shaping: ShapingConfig = field(default_factory=ShapingConfig)

    def __post_init__(self) -> None:
        _need(self.steps >= 0, "steps must be >= 0")
        _need(self.rollout in ("group", "tree"), f"rollout must be group or tree, got {self.rollout!r}")
        if self.rollout == "tree":
            self._check_tree()
        if self.shaping.on:
            self._check_shaping()
        _need(0 < self.lr < 1e-2, f"lr {self.lr} is out of range; 1e-4..3e-4 works, 1e-3 collapsed")
        _need(self.micro_batch > 0, "micro_batch must be positive")

    def _check_shaping(self) -> None:
        """Shaped rewards are relative to the group the server saw, so nothing may edit it afterwards; a
        serial group (s_grpo) is generated whole; RoRecomp recomposes i.i.d. groups."""
        method = self.shaping.method
        server, serial = self.shaping.server, method == "s_grpo"
        if method == "adapt_think":
            self._check_adapt_think()
        forced = method == "adapt_think"  # half of each group forced: generated whole, in one call
        clashes = {
            "rollout: tree": self.rollout == "tree",
            "loss.coefficient correct": self.loss.coefficient == "correct",
            "tools.tools": server and bool(self.tools.tools),
            "replay.inject_correct": server and self.replay.inject_correct,
            "generate.hint_fraction": (serial or forced) and self.generate.hint_fraction > 0,
            "control.partial_rollouts": (serial or forced) and self.control.partial_rollouts,
            "replay.fill_batch": forced and self.replay.fill_batch,
            "control.adaptive_group": serial and self.control.adaptive_group,
        }
        on = [name for name, value in clashes.items() if value]
        _need(
            not on,
            f"shaping.method {method} does not combine with {', '.join(on)} (each edits, splits or resizes "
            "the group it works on); turn them off or set shaping.method none",
        )

    def _check_adapt_think(self) -> None:
        """AdaptThink's reference and what its loss needs: every group (an all-correct one still carries
        the NoThinking bonus), on-policy rows (a replayed row has no pi_IS for its first token)."""
        shaping = self.shaping
        _need(
            (shaping.reference_accuracy is None) != (not shaping.reference_accuracy_file),
            "shaping.method adapt_think needs exactly one of shaping.reference_accuracy (a number for "
            "every prompt) and shaping.reference_accuracy_file (a solve-rate file by name, made by "
            "`assay validate --policy`)",
        )
        _need(
            not self.control.dynamic_sampling,
            "shaping.method adapt_think learns from all-correct groups too (the NoThinking bonus, accuracy "
            "over the reference): set control.dynamic_sampling false",
        )

    def _check_tree(self) -> None:
        """What a tree rollout cannot combine with: options that resample or edit single responses."""
        tree, budget = self.tree, self.generate.max_new_tokens
        clashes = {
            "tools.tools": bool(self.tools.tools),
            "control.partial_rollouts": self.control.partial_rollouts,
            "control.adaptive_group": self.control.adaptive_group,
            "generate.hint_fraction": self.generate.hint_fraction > 0,
            "replay.inject_correct": self.replay.inject_correct,
            "replay.fill_batch": self.replay.fill_batch,
        }
        on = [name for name, value in clashes.items() if value]
        _need(not on, f"rollout: tree does not combine with {', '.join(on)}; turn them off or use group")
        if tree.branching == "segment":
            room = tree.roots * tree.fan_out ** (tree.depth - 1)
            _need(
                room >= self.generate.group_size,
                f"tree: roots x fan_out^(depth-1) = {room} leaves at most, fewer than generate.group_size "
                f"{self.generate.group_size}; raise depth, fan_out or roots",
            )
            _need(
                tree.segment_tokens * (tree.depth - 1) < budget,
                f"tree: the last fork starts at token {tree.segment_tokens * (tree.depth - 1)}, past "
                f"generate.max_new_tokens {budget}; lower depth or segment_tokens",
            )
        else:
            _need(budget >= 2, "tree: entropy forks need generate.max_new_tokens >= 2")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
