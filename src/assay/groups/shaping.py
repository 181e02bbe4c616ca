"""Length control as group arithmetic over verified rewards (issue 40): the server turns a group's verdicts
and lengths into each member's `shaped_reward`; the trainer still computes advantages from it.

- `shorter_better` (Yi et al. 2025, "ShorterBetter: Guiding Reasoning Models to Find Optimal Inference
  Length"; JingyangYi/ShorterBetter): SOL = the length of the shortest correct member, or the mean length
  when none is correct; shaped = alpha * score - beta * |length - SOL| (released code: alpha 2, beta 0.001).
- `adapt_think` (Zhang et al. 2025, "AdaptThink: Reasoning Models Can Learn When to Think";
  THU-KEG/AdaptThink): shaped = accuracy - reference accuracy + delta * [NoThinking], where NoThinking
  means the response opens with `</think>` (an empty thinking block: the template opened it) and accuracy
  is 0 unless the format gate holds (exactly one `</think>`, no `<think>`). Guard (ours, not the paper's):
  a NoThinking answer longer than `nothinking_max_length` earns no bonus, so reasoning hidden after the
  closing tag does not pay.
- `s_grpo` (Dai et al. 2025, "S-GRPO: Early Exit via Reinforcement Learning in Reasoning Models"): the
  members are exits of one reasoning path; ordered by `exit_position`, the k-th correct exit earns
  decay^(k-1) (1/2^(k-1) by default), a wrong exit 0.

A member that is not `ok` gets `shaped_reward: null` and is left out of SOL, the means and the exit
count; `stats.shaping.n_unscored` says how many were. Rubrics (`assay.groups.rubric`) go through the same
door (`shape`), since they also need the group's length unit.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from assay.errors import ItemError
from assay.groups.clusters import Vote
from assay.groups.members import (
    Member,
    ShapingInputError,
    ShapingStats,
    lengths,
    number_field,
    take_member_fields,
)
from assay.groups.parts import group_parts, responses_of
from assay.groups.rubric import Rubric, compose
from assay.groups.stats import GroupOutcome, GroupResult, group_stats, raw_score
from assay.types import Result

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
# The NoThinking cap when the request names none: 2048 tokens, or 4 characters a token when the server
# counts characters. AdaptThink's NoThinking answers to competition maths are a few hundred tokens.
NOTHINKING_CAP = {"tokens": 2048.0, "chars": 8192.0}


class _Method(BaseModel):
    # strict: the schema says number and boolean, so `"alpha": false` is refused as the schema refuses it
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)


class ShorterBetter(_Method):
    method: Literal["shorter_better"]
    alpha: float = Field(2.0, ge=0, description="Weight of correctness.")
    beta: float = Field(0.001, ge=0, description="Penalty per unit of |length - SOL|.")


class AdaptThink(_Method):
    method: Literal["adapt_think"]
    delta: float = Field(0.05, ge=0, description="Bonus of a NoThinking answer.")
    reference_accuracy: float | None = Field(
        None, ge=0, le=1, description="The reference model's accuracy on this prompt."
    )
    reference_accuracy_file: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9._-]*$",
        description="A solve-rate file (`assay validate --policy -o`) in ASSAY_SOLVE_RATES, by name.",
    )
    nothinking_max_length: float | None = Field(
        None, gt=0, description="NoThinking answers longer than this earn no bonus (default 2048 tokens)."
    )

    @model_validator(mode="after")
    def _one_reference(self) -> AdaptThink:
        if (self.reference_accuracy is None) == (self.reference_accuracy_file is None):
            raise ValueError(
                "adapt_think needs exactly one of reference_accuracy and reference_accuracy_file"
            )
        return self


class SGrpo(_Method):
    method: Literal["s_grpo"]
    decay: float = Field(0.5, gt=0, le=1, description="The k-th correct exit earns decay^(k-1).")


Shaping = Annotated[ShorterBetter | AdaptThink | SGrpo, Field(discriminator="method")]
Spec = ShorterBetter | AdaptThink | SGrpo | Rubric
Split = list[tuple[Any, dict[str, Any]]]  # each item without its member fields, and those fields
_SHAPING: TypeAdapter[ShorterBetter | AdaptThink | SGrpo] = TypeAdapter(Shaping)


def parse_options(index: int, group: Any) -> ShorterBetter | AdaptThink | SGrpo | Rubric | None:
    """A group's `shaping` or `rubric` option, validated; ItemError says what is wrong (as a malformed
    group does). A group carries at most one of the two."""
    if not isinstance(group, dict):
        return None
    shaping, rubric = group.get("shaping"), group.get("rubric")
    if shaping is not None and rubric is not None:
        raise ItemError(f"group {index}: give shaping or rubric, not both")
    try:
        if shaping is not None:
            return (
                shaping
                if isinstance(shaping, ShorterBetter | AdaptThink | SGrpo)
                else _SHAPING.validate_python(shaping)
            )
        if rubric is not None:
            return rubric if isinstance(rubric, Rubric) else Rubric.model_validate(rubric)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())
        raise ItemError(
            f"group {index}: bad {'shaping' if shaping is not None else 'rubric'}: {problems}"
        ) from exc
    return None


class SolveRates:
    """Solve-rate files under one directory, read once per version (path, size, mtime)."""

    def __init__(self, directory: Path | None) -> None:
        self._directory = directory
        self._cache: dict[str, tuple[tuple[int, int], dict[str, float]]] = {}

    def accuracy(self, name: str, gid: str | None, prompt: str | None) -> float:
        """The solve rate of the group's prompt, found by the group id, then by prompt text."""
        if self._directory is None:
            raise ShapingInputError(
                "reference_accuracy_file needs ASSAY_SOLVE_RATES, the directory holding solve-rate files"
            )
        table = self._table(self._directory / name, name)
        for key in (gid, prompt):
            if key is not None and key in table:
                return table[key]
        raise ShapingInputError(f"{name} has no solve rate for group {gid!r} (by id or by prompt)")

    def _table(self, path: Path, name: str) -> dict[str, float]:
        try:
            info = path.stat()
            version = (info.st_size, info.st_mtime_ns)
            cached = self._cache.get(name)
            if cached is not None and cached[0] == version:
                return cached[1]
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ShapingInputError(f"cannot read solve-rate file {name}: {type(exc).__name__}") from exc
        table: dict[str, float] = {}
        for line in text.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            rate = row.get("solve_rate") if isinstance(row, dict) else None
            if isinstance(rate, int | float) and not isinstance(rate, bool) and 0 <= rate <= 1:
                for key in ("id", "prompt"):
                    if isinstance(row.get(key), str | int) and not isinstance(row.get(key), bool):
                        table.setdefault(str(row[key]), float(rate))
        self._cache[name] = (version, table)
        return table


def shorter_better(spec: ShorterBetter, members: Sequence[Member], stats: ShapingStats) -> list[float | None]:
    """alpha * score - beta * |length - SOL| (see the module docstring)."""
    lens, stats.length_unit = lengths(members)
    scored = [(m, n) for m, n in zip(members, lens, strict=True) if n is not None]
    if not scored:
        return [None] * len(members)
    correct = [n for m, n in scored if m.result.correct is True]
    stats.sol = min(correct) if correct else statistics.fmean(n for _, n in scored)
    stats.sol_source = "shortest_correct" if correct else "mean_length"
    sol = stats.sol
    return [
        None if n is None else spec.alpha * _score(m) - spec.beta * abs(n - sol)
        for m, n in zip(members, lens, strict=True)
    ]


def adapt_think(
    spec: AdaptThink, members: Sequence[Member], stats: ShapingStats, reference: float
) -> list[float | None]:
    """accuracy - reference + delta * [NoThinking and within the cap] (see the module docstring)."""
    lens, stats.length_unit = lengths(members)
    cap = spec.nothinking_max_length or NOTHINKING_CAP[stats.length_unit]
    stats.reference_accuracy, stats.nothinking_max_length = reference, cap
    counts = {"nothinking": 0, "thinking": 0, "over_cap": 0, "format_failed": 0}
    out: list[float | None] = []
    for m, n in zip(members, lens, strict=True):
        if n is None:
            out.append(None)
            continue
        text = m.response or ""
        formatted = THINK_OPEN not in text and text.count(THINK_CLOSE) == 1
        nothinking = text.lstrip().startswith(THINK_CLOSE)
        counts["format_failed"] += not formatted
        counts["nothinking" if nothinking else "thinking"] += 1
        counts["over_cap"] += nothinking and n > cap
        bonus = spec.delta if nothinking and n <= cap else 0.0
        out.append((_score(m) if formatted else 0.0) - reference + bonus)
    stats.n_nothinking, stats.n_thinking = counts["nothinking"], counts["thinking"]
    stats.n_over_cap, stats.n_format_failed = counts["over_cap"], counts["format_failed"]
    return out


def s_grpo(spec: SGrpo, members: Sequence[Member], stats: ShapingStats) -> list[float | None]:
    """decay^(k-1) for the k-th correct exit by `exit_position`, 0 for a wrong one (ties keep item order)."""
    positions = [number_field(m, i, "exit_position") for i, m in enumerate(members)]
    missing = [i for i, (m, p) in enumerate(zip(members, positions, strict=True)) if m.ok and p is None]
    if missing:
        raise ShapingInputError(f"s_grpo needs exit_position on every item; item {missing[0]} has none")
    order = sorted(
        (p, i) for i, (m, p) in enumerate(zip(members, positions, strict=True)) if m.ok and p is not None
    )
    out: list[float | None] = [None] * len(members)
    k = 0
    for position, i in order:
        if members[i].result.correct is True:
            k += 1
            if k == 1:
                stats.first_correct_exit = position
            out[i] = spec.decay ** (k - 1)
        else:
            out[i] = 0.0
    stats.n_correct_exits = k
    return out


def _score(member: Member) -> float:
    score = raw_score(member.result)
    return 0.0 if score is None else score


def shape(
    spec: ShorterBetter | AdaptThink | SGrpo | Rubric,
    members: Sequence[Member],
    reference: float | None = None,
) -> tuple[list[float | None], ShapingStats, list[Result]]:
    """Each member's shaped reward (None where it is unscored or the group cannot be shaped), the group's
    shaping statistics, and the results (a rubric adds its components to `details`)."""
    stats = ShapingStats(method=spec.method, n_unscored=sum(not m.ok for m in members))
    results = [m.result for m in members]
    try:
        if isinstance(spec, ShorterBetter):
            rewards = shorter_better(spec, members, stats)
        elif isinstance(spec, AdaptThink):
            if reference is None:
                raise ShapingInputError("adapt_think has no reference accuracy")
            rewards = adapt_think(spec, members, stats, reference)
        elif isinstance(spec, SGrpo):
            rewards = s_grpo(spec, members, stats)
        else:
            rewards, results, stats.n_gated, stats.length_unit = compose(spec, members)
    except ShapingInputError as exc:
        stats.error = str(exc)
        return [None] * len(members), stats, [m.result for m in members]
    return [None if r is None or not math.isfinite(r) else r for r in rewards], stats, results


def shaping_parts(index: int, group: Any) -> tuple[str | None, Spec | None, Split]:
    """(id, option, items split from their member fields) of one group; ItemError when malformed. The
    one way a group is read for shaping, by the engine and by the Ray engine."""
    gid, items = group_parts(index, group)
    return gid, parse_options(index, group), [take_member_fields(raw) for raw in items]


def _reference(
    spec: Spec, gid: str | None, items: Sequence[Any], solve_rates: SolveRates
) -> tuple[float | None, str | None]:
    """(adapt_think's reference accuracy, or why there is none)."""
    if not isinstance(spec, AdaptThink):
        return None, None
    if spec.reference_accuracy is not None:
        return spec.reference_accuracy, None
    prompts = [i.get("prompt") for i in items if isinstance(i, dict) and isinstance(i.get("prompt"), str)]
    try:
        file = spec.reference_accuracy_file or ""
        return solve_rates.accuracy(file, gid, prompts[0] if prompts else None), None
    except ShapingInputError as exc:
        return None, str(exc)


def group_outcome(
    gid: str | None,
    spec: Spec | None,
    split: Split,
    results: Sequence[Result],
    solve_rates: SolveRates,
    vote: Vote | None = None,
) -> GroupOutcome:
    """One scored group with its statistics (with `vote`, its answer clusters) and, under an option, each
    result's shaped reward. May read a solve-rate file: call it off the event loop when the option names
    one."""
    items = [item for item, _ in split]
    texts = responses_of(items)
    stats = group_stats(results, texts, vote)
    if spec is None:
        return GroupOutcome(id=gid, results=list(results), stats=stats)
    members = [Member(r, t, extras) for r, t, (_, extras) in zip(results, texts, split, strict=True)]
    reference, problem = _reference(spec, gid, items, solve_rates)
    rewards, stats.shaping, shaped = shape(spec, members, reference)
    if problem is not None:
        stats.shaping.error = problem
    return GroupOutcome(
        id=gid,
        results=[GroupResult(**dict(r), shaped_reward=w) for r, w in zip(shaped, rewards, strict=True)],
        stats=stats,
    )
