"""Pass@K and Maj@K before and after a run (runs/k_eval.py): sampled held-out groups voted through
POST /v1/groups, so Maj@K counts answers by the task's equivalence, not strings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from assay.client import AssayClient
from assay.groups import GroupOutcome, GroupStats, majority_at_k, pass_at_k
from assay.rl_client.generate import Completion, Problem, SamplingParams
from assay.rl_client.runs.k_eval import curve_points, k_evaluation, summarise

# 16 samples of one prompt whose gold is 0.5: the most frequent string ("3", 6 times) is wrong, the
# most frequent answer (1/2 in three spellings, 10 times) is right.
SCRIPT = ["\\boxed{3}"] * 6 + ["\\boxed{1/2}"] * 4 + ["\\boxed{0.5}"] * 3 + ["\\boxed{\\frac12}"] * 3


class ScriptedBackend:
    """Answers every prompt with SCRIPT in order; its "RNG state" is how many calls it served."""

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        self.calls += 1
        return [Completion([], [], SCRIPT[i % len(SCRIPT)], [], False) for i in range(len(prompts))]

    def state_dict(self) -> dict[str, Any]:
        return {"calls": self.calls}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.calls = state["calls"]


@pytest.mark.slow  # a live server's math workers start cold: about 15 s on 2 shared cores
def test_maj_at_k_votes_by_equivalence_through_the_server(live_server: Callable[..., Any]) -> None:
    backend = ScriptedBackend()
    problems = [Problem("p1", "What is 1/2?", "0.5")]
    with AssayClient(live_server().url) as client:
        got = k_evaluation(backend, client, problems, 16, SamplingParams(1.0, 8))  # type: ignore[arg-type]
    assert got["pass_at_k"] == {"1": 0.625, "4": round(pass_at_k(16, 10, 4), 4), "16": 1.0}
    # A vote over strings would make Maj@16 0 (six "3"); over answers it is 1 (ten halves).
    assert got["maj_at_k"] == {
        "1": 0.625,
        "4": round(majority_at_k([10, 6], [True, False], 16, 4), 4),
        "16": 1.0,
    }
    assert backend.calls == 0  # the sampling state is put back: evaluating does not move training's RNG


def _outcome(pass_at: dict[str, float], maj_at: dict[str, float]) -> GroupOutcome:
    stats = GroupStats(
        n=16, n_scored=16, all_equal=False, learning_value=0.0, pass_at_k=pass_at, maj_at_k=maj_at
    )
    return GroupOutcome(results=[], stats=stats)


def test_groups_without_a_value_are_left_out_of_the_mean_not_counted_as_zero() -> None:
    outcomes = [_outcome({"1": 0.5, "4": 1.0}, {"1": 0.5, "4": 0.75}), _outcome({"1": 0.25}, {})]
    got = summarise(outcomes, 4)
    assert got == {"pass_at_k": {"1": 0.375, "4": 1.0}, "maj_at_k": {"1": 0.5, "4": 0.75}}
    assert summarise([_outcome({}, {})], 16) == {
        "pass_at_k": {"1": None, "4": None, "16": None},
        "maj_at_k": {"1": None, "4": None, "16": None},
    }


def test_the_plot_gets_one_key_per_measure_and_k() -> None:
    points = curve_points({"pass_at_k": {"1": 0.5, "16": None}, "maj_at_k": {"4": 0.75}})
    assert points == {"pass_at_1": 0.5, "maj_at_4": 0.75}


def test_no_samples_means_no_evaluation() -> None:
    backend, problems = ScriptedBackend(), [Problem("p", "q", "1")]
    got = k_evaluation(backend, None, problems, 0, SamplingParams(1.0, 4))  # type: ignore[arg-type]
    assert got == {"pass_at_k": {}, "maj_at_k": {}}
