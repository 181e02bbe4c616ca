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
    failure_rate: float = 0.05  # invalid + timeout + error, late level
    failure_rise: float = 0.02  # ... or its rise from early to late
    judge_disagreement: float = 0.15
    difficulty_drift: float = 0.25  # |late - early| of generated tasks' difficulty (0..1 scale)


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
    base = Finding(
        "vanishing_advantage",
        "Vanishing advantage",
        "no data",
        "",
        f"late zero-advantage fraction >= {t.zero_advantage:g}",
        "Most groups teach nothing. Turn on dynamic sampling (drop all-equal groups and resample), "
        "skip solved prompts (GRESO), give more samples to prompts near 50% (learning_value), or move to "
        "harder/easier prompts; check that the reward is not constant.",
        ("frac_zero_advantage",),
    )
    if points is None and server is None:
        return base
    late = _late(points) if points else float(server or 0.0)
    where = "in the last third of steps" if points else "on the server's recent /v1/groups traffic"
    base.status = "tripped" if late >= t.zero_advantage else "healthy"
    base.evidence = f"{late:.0%} of groups had all-equal raw scores {where}"
    return base


def exploration_collapse(run: Run, t: Thresholds) -> Finding:
    entropy = _enough(run, "entropy", t)
    distinct = _enough(run, "distinct_answers_mean", t)
    base = Finding(
        "exploration_collapse",
        "Exploration collapse",
        "no data",
        "",
        f"late entropy < {t.entropy_drop:g} x early and <= {t.distinct_answers:g} distinct answers per group"
        f" (entropy alone: < {t.entropy_only_drop:g} x early)",
        "The policy stopped exploring. Raise the sampling temperature, use clip-higher (DAPO, clip_high "
        "0.28), lower the learning rate, add an entropy bonus or fewer optimiser passes per batch.",
        ("entropy", "distinct_answers_mean"),
    )
    if entropy is None:
        return base
    early, late = _halves(entropy)
    ratio = late / early if early > 0 else 1.0
    if distinct is not None:
        d_early, d_late = _halves(distinct)
        tripped = ratio < t.entropy_drop and d_late <= t.distinct_answers
        base.evidence = (
            f"entropy {early:.3g} -> {late:.3g} nats/token (x{ratio:.2f}); distinct answers per group "
            f"{d_early:.2f} -> {d_late:.2f}"
        )
    else:
        tripped = ratio < t.entropy_only_drop
        base.evidence = f"entropy {early:.3g} -> {late:.3g} nats/token (x{ratio:.2f}); diversity not logged"
    base.status = "tripped" if tripped else "healthy"
    return base


def length_explosion(run: Run, t: Thresholds) -> Finding:
    trunc = _enough(run, "truncation_rate", t)
    length = _enough(run, "response_length", t)
    base = Finding(
        "length_explosion",
        "Length explosion",
        "no data",
        "",
        f"late truncation rate >= {t.truncation:g}, or length x{t.length_growth:g} with rising truncation",
        "Responses run into the token limit. Use overlong filtering (zero loss weight for truncated "
        "responses) and the soft overlong penalty (DAPO), token-level loss aggregation, or a larger limit "
        "if the answers really need it.",
        ("truncation_rate", "response_length"),
    )
    if trunc is None:
        return base
    t_early, t_late = _halves(trunc)
    growth = 1.0
    if length is not None:
        l_early, l_late = _halves(length)
        growth = l_late / l_early if l_early > 0 else 1.0
    grew = growth >= t.length_growth and t_late > t_early
    base.status = "tripped" if t_late >= t.truncation or grew else "healthy"
    base.evidence = f"truncation rate {t_early:.1%} -> {t_late:.1%}; mean length x{growth:.2f}"
    return base


def stale_replay(run: Run, t: Thresholds) -> Finding:
    lag = run.series("replay_lag_mean")
    base = Finding(
        "stale_replay",
        "Stale replay",
        "no data",
        "",
        f"mean policy-version lag of replayed samples >= {t.replay_lag:g}",
        "Replayed samples come from policies far behind the one being trained; their importance ratios "
        "get clipped and bias the update. Lower replay max_staleness, shrink the buffer, or generate "
        "more fresh groups (more rounds) instead of topping up from replay.",
        ("replay_lag_mean",),
    )
    if not lag:
        return base  # nothing replayed: nothing stale
    late = _late(lag)
    base.status = "tripped" if late >= t.replay_lag else "healthy"
    base.evidence = f"replayed samples lagged {late:.2f} policy versions on average (over {len(lag)} steps)"
    return base


def reward_hacking(run: Run, t: Thresholds) -> Finding:
    base = Finding(
        "reward_hacking",
        "Reward hacking",
        "no data",
        "",
        f"train reward +{t.reward_rise:g} while held-out accuracy +< {t.dev_flat:g}; hedges >= "
        f"{t.hedge_rate:g}; test literals >= {t.test_literal_rate:g}; one answer >= {t.constant_answer:g}",
        "The reward rises without the skill. Read samples of rewarded responses; harden the verifier "
        "(hedges are wrong, expected outputs never reach the program, SQL results are compared on several "
        "databases), and judge progress by held-out greedy accuracy.",
        ("reward", "dev_accuracy", "hedge_rate", "constant_answer_share"),
    )
    seen: list[str] = []
    tripped: list[str] = []
    reward, dev = _enough(run, "reward", t), run.series("dev_accuracy")
    if reward is not None and len(dev) >= 3:
        (r0, r1), (d0, d1) = _halves(reward), _halves(dev)
        seen.append(f"train reward {r0:.2f} -> {r1:.2f}, held-out greedy accuracy {d0:.2f} -> {d1:.2f}")
        if r1 - r0 >= t.reward_rise and d1 - d0 < t.dev_flat:
            tripped.append("reward up, held-out accuracy flat")
    for key, limit, name in (
        ("hedge_rate", t.hedge_rate, "hedged answers"),
        ("test_literal_rate", t.test_literal_rate, "programs printing test literals"),
        ("constant_answer_share", t.constant_answer, "one answer for every prompt"),
    ):
        points = _enough(run, key, t)
        if points is not None:
            late = _late(points)
            seen.append(f"{name}: {late:.1%} late")
            if late >= limit:
                tripped.append(name)
    if seen:
        base.status = "tripped" if tripped else "healthy"
        base.evidence = "; ".join(seen) + (f". Tripped: {', '.join(tripped)}" if tripped else "")
    return base


def brittle_verifier(run: Run, t: Thresholds) -> Finding:
    base = Finding(
        "brittle_verifier",
        "Brittle verifier",
        "no data",
        "",
        f"late invalid+timeout+error rate >= {t.failure_rate:g} or rising by {t.failure_rise:g}; judge/rule "
        f"disagreement >= {t.judge_disagreement:g}",
        "The reward step is failing, not the policy. Look at the failing results' reasons (assay_items_total "
        "by status, worker restarts): raise deadlines or workers, fix references that are `invalid`, and "
        "for disagreement, add cases to the verifier's test set.",
        ("failure_rate", "judge_disagreement_rate"),
    )
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
    if seen:
        base.status = "tripped" if tripped else "healthy"
        base.evidence = "; ".join(seen)
    return base


def runaway_self_evolution(run: Run, t: Thresholds) -> Finding:
    points = _enough(run, "task_difficulty", t)
    base = Finding(
        "runaway_self_evolution",
        "Runaway self-evolution",
        "no data",
        "",
        f"|late - early| difficulty of generated tasks >= {t.difficulty_drift:g} (0..1 scale)",
        "The generated curriculum drifts away from what the solver can learn from. Anchor generation to "
        "a fixed seed set, filter generated tasks by the solver's pass rate (keep 0.2-0.8), and check "
        "generated tasks with the verifier before training on them.",
        ("task_difficulty",),
    )
    if points is None:
        return base
    early, late = _halves(points)
    base.status = "tripped" if abs(late - early) >= t.difficulty_drift else "healthy"
    base.evidence = f"difficulty of generated tasks {early:.2f} -> {late:.2f}"
    return base


CHECKS: tuple[Callable[[Run, Thresholds], Finding], ...] = (
    vanishing_advantage,
    exploration_collapse,
    length_explosion,
    stale_replay,
    reward_hacking,
    brittle_verifier,
    runaway_self_evolution,
)


def diagnose(run: Run, thresholds: Thresholds | None = None) -> list[Finding]:
    """Every check's finding, in a fixed order."""
    t = thresholds or Thresholds()
    return [check(run, t) for check in CHECKS]
