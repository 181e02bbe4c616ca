"""One check per failure mode. Each compares the early and late parts of a signal (first and last third of
its points) or a late level against a threshold, and says what it saw, the threshold and what to try.

Thresholds are starting points, not laws: they sit well away from what healthy runs here showed (the CPU
demo: zero-advantage fraction 0.3-0.7, no truncation, no failures) and can be changed per call.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from assay.doctor.run import Run

Status = Literal["tripped", "healthy", "no data"]


@dataclass(frozen=True)
class Thresholds:
    min_points: int = 6  # points a signal needs before its trend is judged
    zero_advantage: float = 0.8  # late fraction of groups with all-equal raw scores
    entropy_drop: float = 0.4  # late entropy below this fraction of early entropy ...
    distinct_answers: float = 1.5  # ... while groups give at most this many distinct answers
    entropy_only_drop: float = 0.2  # entropy ratio that trips on its own, when diversity is not logged
    truncation: float = 0.2  # late fraction of responses cut at the token limit
    length_growth: float = 1.5  # late/early mean length, together with rising truncation
    replay_lag: float = 3.0  # mean policy versions between a replayed sample and its update
    reward_rise: float = 0.15  # train reward gain ...
    dev_flat: float = 0.03  # ... while held-out greedy accuracy gains less than this
    hedge_rate: float = 0.1
    test_literal_rate: float = 0.05
    constant_answer: float = 0.5  # share of all samples giving the single most common answer
    flagged_rate: float = 0.02  # share of scored items carrying one flag (details.flags, docs/audit.md)
    failure_rate: float = 0.05  # invalid + timeout + error, late level
    failure_rise: float = 0.02  # ... or its rise from early to late
    judge_disagreement: float = 0.15
    difficulty_drift: float = 0.25  # |late - early| of generated tasks' difficulty (0..1 scale)
    # multi-turn tool use (issue 26)
    tool_error_rate: float = 0.5  # late share of tool calls that failed
    min_tool_calls: float = 0.05  # late tool calls per rollout below this: the tools go unused
    never_stop_share: float = 0.5  # late share of rollouts whose answering turn still wrote a tool call
    observation_share: float = 0.6  # late share of response tokens that were observations


@dataclass
class Finding:
    mode: str  # machine name, e.g. "vanishing_advantage"
    title: str
    status: Status
    evidence: str
    threshold: str
    advice: str
    signals: tuple[str, ...] = field(default=())

    @property
    def tripped(self) -> bool:
        return self.status == "tripped"


def _halves(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Mean of the first and of the last third of the points."""
    third = max(1, len(points) // 3)
    return statistics.fmean(v for _, v in points[:third]), statistics.fmean(v for _, v in points[-third:])


def _late(points: Sequence[tuple[float, float]]) -> float:
    return _halves(points)[1]


def _enough(run: Run, key: str, t: Thresholds) -> list[tuple[float, float]] | None:
    points = run.series(key)
    return points if len(points) >= t.min_points else None


def _trend(run: Run, key: str, t: Thresholds) -> tuple[float, float] | None:
    """Early and late means of a signal (`_halves`), or None when it has too few points to judge."""
    points = _enough(run, key, t)
    return None if points is None else _halves(points)


@dataclass(frozen=True)
class Mode:
    """What the report says of a failure mode whatever the run: its title, its threshold (a template
    over the `Thresholds` as `t`), the signals plotted for it and what to try. The checks below only
    compute a verdict and its evidence."""

    title: str
    threshold: str
    signals: tuple[str, ...]
    advice: str


MODES: dict[str, Mode] = {
    "vanishing_advantage": Mode(
        "Vanishing advantage",
        "late zero-advantage fraction >= {t.zero_advantage:g}",
        ("frac_zero_advantage",),
        "Most groups teach nothing. Turn on dynamic sampling (drop all-equal groups and resample), "
        "skip solved prompts (GRESO), give more samples to prompts near 50% (learning_value), or move to "
        "harder/easier prompts; check that the reward is not constant.",
    ),
    "exploration_collapse": Mode(
        "Exploration collapse",
        "late entropy < {t.entropy_drop:g} x early and <= {t.distinct_answers:g} distinct answers per group"
        " (entropy alone: < {t.entropy_only_drop:g} x early)",
        ("entropy", "distinct_answers_mean"),
        "The policy stopped exploring. Raise the sampling temperature, use clip-higher (DAPO, clip_high "
        "0.28), lower the learning rate, add an entropy bonus or fewer optimiser passes per batch.",
    ),
    "length_explosion": Mode(
        "Length explosion",
        "late truncation rate >= {t.truncation:g}, or length x{t.length_growth:g} with rising truncation",
        ("truncation_rate", "response_length"),
        "Responses run into the token limit. Use overlong filtering (zero loss weight for truncated "
        "responses) and the soft overlong penalty (DAPO), token-level loss aggregation, or a larger limit "
        "if the answers really need it.",
    ),
    "stale_replay": Mode(
        "Stale replay",
        "mean policy-version lag of replayed samples >= {t.replay_lag:g}",
        ("replay_lag_mean",),
        "Replayed samples come from policies far behind the one being trained; their importance ratios "
        "get clipped and bias the update. Lower replay max_staleness, shrink the buffer, or generate "
        "more fresh groups (more rounds) instead of topping up from replay.",
    ),
    "reward_hacking": Mode(
        "Reward hacking",
        "train reward +{t.reward_rise:g} while held-out accuracy +< {t.dev_flat:g}; hedges >= "
        "{t.hedge_rate:g}; test literals >= {t.test_literal_rate:g}; one answer >= {t.constant_answer:g}; "
        "items flagged by the verifiers (one flag) >= {t.flagged_rate:g}",
        ("reward", "dev_accuracy", "hedge_rate", "constant_answer_share", "flagged_rate"),
        "The reward rises without the skill. Read samples of rewarded responses; harden the verifier "
        "(hedges are wrong, expected outputs never reach the program, SQL results are compared on several "
        "databases), and judge progress by held-out greedy accuracy. Flags name the hack the verifier "
        "saw (docs/audit.md); `assay audit` shows which families your verifiers still reward.",
    ),
    "brittle_verifier": Mode(
        "Brittle verifier",
        "late invalid+timeout+error rate >= {t.failure_rate:g} or rising by {t.failure_rise:g}; judge/rule "
        "disagreement >= {t.judge_disagreement:g}",
        ("failure_rate", "judge_disagreement_rate"),
        "The reward step is failing, not the policy. Look at the failing results' reasons (assay_items_total "
        "by status, worker restarts): raise deadlines or workers, fix references that are `invalid`, and "
        "for disagreement, add cases to the verifier's test set.",
    ),
    "runaway_self_evolution": Mode(
        "Runaway self-evolution",
        "|late - early| difficulty of generated tasks >= {t.difficulty_drift:g} (0..1 scale)",
        ("task_difficulty",),
        "The generated curriculum drifts away from what the solver can learn from. Anchor generation to "
        "a fixed seed set, filter generated tasks by the solver's pass rate (keep 0.2-0.8), and check "
        "generated tasks with the verifier before training on them.",
    ),
    "tool_error_storm": Mode(
        "Tool-error storm",
        "late tool error rate >= {t.tool_error_rate:g}",
        ("tool_error_rate",),
        "Most tool calls fail. Read the failing calls' observations (tracebacks, refused queries, "
        "timeouts): check the call format the policy was taught, the session limits (call_wall_s, "
        "max_steps), and that the task's items can serve the tool (db_id for sql).",
    ),
    "tools_never_called": Mode(
        "Tools never called",
        "late tool calls per rollout < {t.min_tool_calls:g}",
        ("tool_calls_per_rollout",),
        "The policy does not use its tools. Check that the prompt shows the call format and its stop "
        "string (`</python>`), start from a model fine-tuned on a few tool-use traces, and check that "
        "tools help on these tasks at all.",
    ),
    "tools_never_stop": Mode(
        "Tools never stop",
        "late share of rollouts still calling a tool when they must answer >= {t.never_stop_share:g}",
        ("never_stop_calling_share",),
        "Rollouts spend every turn on tool calls and never answer. Lower max_turns, check that "
        "observations end visibly (observation_template), and that answering without another call is "
        "rewarded.",
    ),
    "observation_flood": Mode(
        "Observation flood",
        "late observation share of response tokens >= {t.observation_share:g}",
        ("observation_share", "truncation_rate"),
        "Tool output fills the context. Lower max_observation_tokens or the session's output_bytes, "
        "raise max_total_tokens if answers are cut, and teach the policy to print less.",
    ),
}


def _finding(t: Thresholds, mode: str, tripped: bool | None = None, evidence: str = "") -> Finding:
    """`mode`'s finding; `tripped` None: its signals were not logged (never "healthy" by default)."""
    about = MODES[mode]
    status: Status = "no data" if tripped is None else "tripped" if tripped else "healthy"
    threshold = about.threshold.format(t=t)
    return Finding(mode, about.title, status, evidence, threshold, about.advice, about.signals)


def vanishing_advantage(run: Run, t: Thresholds) -> Finding:
    points = _enough(run, "frac_zero_advantage", t)
    if points is None:  # older logs: all-correct plus all-wrong groups are the zero-advantage ones
        both = [
            (s, a + w)
            for (s, a), (_, w) in zip(
                run.series("frac_all_correct"), run.series("frac_all_wrong"), strict=False
            )
        ]
        points = both if len(both) >= t.min_points else None
    server = run.server.get("assay_groups_zero_advantage_fraction")
    if points is None and server is None:
        return _finding(t, "vanishing_advantage")
    late = _late(points) if points else float(server or 0.0)
    where = "in the last third of steps" if points else "on the server's recent /v1/groups traffic"
    evidence = f"{late:.0%} of groups had all-equal raw scores {where}"
    return _finding(t, "vanishing_advantage", late >= t.zero_advantage, evidence)


def exploration_collapse(run: Run, t: Thresholds) -> Finding:
    entropy = _trend(run, "entropy", t)
    if entropy is None:
        return _finding(t, "exploration_collapse")
    early, late = entropy
    ratio = late / early if early > 0 else 1.0
    evidence = f"entropy {early:.3g} -> {late:.3g} nats/token (x{ratio:.2f})"
    distinct = _trend(run, "distinct_answers_mean", t)
    if distinct is None:
        evidence += "; diversity not logged"
        return _finding(t, "exploration_collapse", ratio < t.entropy_only_drop, evidence)
    d_early, d_late = distinct
    tripped = ratio < t.entropy_drop and d_late <= t.distinct_answers
    evidence += f"; distinct answers per group {d_early:.2f} -> {d_late:.2f}"
    return _finding(t, "exploration_collapse", tripped, evidence)


def length_explosion(run: Run, t: Thresholds) -> Finding:
    truncation = _trend(run, "truncation_rate", t)
    if truncation is None:
        return _finding(t, "length_explosion")
    t_early, t_late = truncation
    length = _trend(run, "response_length", t)
    growth = length[1] / length[0] if length is not None and length[0] > 0 else 1.0
    tripped = t_late >= t.truncation or (growth >= t.length_growth and t_late > t_early)
    evidence = f"truncation rate {t_early:.1%} -> {t_late:.1%}; mean length x{growth:.2f}"
    return _finding(t, "length_explosion", tripped, evidence)


def stale_replay(run: Run, t: Thresholds) -> Finding:
    lag = run.series("replay_lag_mean")
    if not lag:
        return _finding(t, "stale_replay")  # nothing replayed: nothing stale
    late = _late(lag)
    evidence = f"replayed samples lagged {late:.2f} policy versions on average (over {len(lag)} steps)"
    return _finding(t, "stale_replay", late >= t.replay_lag, evidence)


def reward_hacking(run: Run, t: Thresholds) -> Finding:
    seen: list[str] = []
    tripped: list[str] = []
    reward, dev = _trend(run, "reward", t), run.series("dev_accuracy")
    if reward is not None and len(dev) >= 3:
        (r0, r1), (d0, d1) = reward, _halves(dev)
        seen.append(f"train reward {r0:.2f} -> {r1:.2f}, held-out greedy accuracy {d0:.2f} -> {d1:.2f}")
        if r1 - r0 >= t.reward_rise and d1 - d0 < t.dev_flat:
            tripped.append("reward up, held-out accuracy flat")
    for key, limit, name in (
        ("hedge_rate", t.hedge_rate, "hedged answers"),
        ("test_literal_rate", t.test_literal_rate, "programs printing test literals"),
        ("constant_answer_share", t.constant_answer, "one answer for every prompt"),
        ("flagged_rate", t.flagged_rate, "items flagged by the verifiers"),
    ):
        points = _enough(run, key, t)
        if points is not None:
            late = _late(points)
            seen.append(f"{name}: {late:.1%} late")
            if late >= limit:
                tripped.append(name)
    flagged = _server_flags(run)
    if flagged is not None:
        total, by_flag = flagged
        top = sorted(by_flag.items(), key=lambda kv: -kv[1])
        listed = ", ".join(f"{name} {count:.0f}" for name, count in top[:4]) or "none"
        seen.append(f"server: flags on {total:.0f} items ({listed})")
        if top and total and top[0][1] / total >= t.flagged_rate:
            tripped.append(f"{top[0][0]} on {top[0][1] / total:.1%} of items")
    if not seen:
        return _finding(t, "reward_hacking")
    evidence = "; ".join(seen) + (f". Tripped: {', '.join(tripped)}" if tripped else "")
    return _finding(t, "reward_hacking", bool(tripped), evidence)


def _server_flags(run: Run) -> tuple[float, dict[str, float]] | None:
    """Items the server scored and, per flag, how many carried it (`assay_flagged_items_total`)."""
    items = sum(v for k, v in run.server.items() if k.startswith("assay_items_total{"))
    if not items:
        return None
    by_flag: dict[str, float] = {}
    for key, value in run.server.items():
        if key.startswith("assay_flagged_items_total{"):
            flag = key.split('flag="', 1)[1].split('"', 1)[0] if 'flag="' in key else "other"
            by_flag[flag] = by_flag.get(flag, 0.0) + value
    return items, by_flag


def brittle_verifier(run: Run, t: Thresholds) -> Finding:
    rates = [run.series(k) for k in ("invalid_rate", "timeout_rate", "error_rate")]
    steps = sorted({s for series in rates for s, _ in series})
    by_step = [dict(series) for series in rates]
    failure = [(s, sum(d.get(s, 0.0) for d in by_step)) for s in steps]
    seen, tripped = [], False
    if len(failure) >= t.min_points:
        early, late = _halves(failure)
        seen.append(f"invalid+timeout+error {early:.1%} -> {late:.1%} of samples")
        tripped |= late >= t.failure_rate or (late - early >= t.failure_rise and late >= t.failure_rise / 2)
    disagreement = _enough(run, "judge_disagreement_rate", t)
    if disagreement is not None:
        late = _late(disagreement)
        seen.append(f"judge/rule disagreement {late:.1%}")
        tripped |= late >= t.judge_disagreement
    served = {k: v for k, v in run.server.items() if k.startswith("assay_items_total{")}
    if served:
        total = sum(served.values())
        ok = sum(v for k, v in served.items() if 'status="ok"' in k)
        share = 1 - ok / total if total else 0.0
        seen.append(f"server: {share:.1%} of {total:.0f} items not ok")
        tripped |= share >= t.failure_rate
    if not seen:
        return _finding(t, "brittle_verifier")
    return _finding(t, "brittle_verifier", tripped, "; ".join(seen))


def runaway_self_evolution(run: Run, t: Thresholds) -> Finding:
    difficulty = _trend(run, "task_difficulty", t)
    if difficulty is None:
        return _finding(t, "runaway_self_evolution")
    early, late = difficulty
    evidence = f"difficulty of generated tasks {early:.2f} -> {late:.2f}"
    return _finding(t, "runaway_self_evolution", abs(late - early) >= t.difficulty_drift, evidence)


def _late_level(
    run: Run, t: Thresholds, mode: str, key: str, trips: Callable[[float], bool], what: str
) -> Finding:
    points = _enough(run, key, t)
    if points is None:
        return _finding(t, mode)  # not a multi-turn run, or too short to judge
    late = _late(points)
    return _finding(t, mode, trips(late), f"{what} {late:.2f} in the last third of steps")


def tool_error_storm(run: Run, t: Thresholds) -> Finding:
    trips = lambda v: v >= t.tool_error_rate  # noqa: E731
    return _late_level(run, t, "tool_error_storm", "tool_error_rate", trips, "tool error rate")


def tools_never_called(run: Run, t: Thresholds) -> Finding:
    trips = lambda v: v < t.min_tool_calls  # noqa: E731
    return _late_level(
        run, t, "tools_never_called", "tool_calls_per_rollout", trips, "tool calls per rollout"
    )


def tools_never_stop(run: Run, t: Thresholds) -> Finding:
    trips = lambda v: v >= t.never_stop_share  # noqa: E731
    what = "share of rollouts calling in every turn"
    return _late_level(run, t, "tools_never_stop", "never_stop_calling_share", trips, what)


def observation_flood(run: Run, t: Thresholds) -> Finding:
    trips = lambda v: v >= t.observation_share  # noqa: E731
    what = "observation share of response tokens"
    return _late_level(run, t, "observation_flood", "observation_share", trips, what)


CHECKS: tuple[Callable[[Run, Thresholds], Finding], ...] = (
    vanishing_advantage,
    exploration_collapse,
    length_explosion,
    stale_replay,
    reward_hacking,
    brittle_verifier,
    runaway_self_evolution,
    tool_error_storm,
    tools_never_called,
    tools_never_stop,
    observation_flood,
)


def diagnose(run: Run, thresholds: Thresholds | None = None) -> list[Finding]:
    """Every check's finding, in a fixed order."""
    t = thresholds or Thresholds()
    return [check(run, t) for check in CHECKS]
