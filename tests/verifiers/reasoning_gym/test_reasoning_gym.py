"""The `reasoning_gym` task on reasoning-gym's own datasets and scorers: items drawn by name and seed,
maths families judged by Assay's math verifier, the others by the dataset's `score_answer`, wrong and
hostile answers scored 0, unscorable items a clear status, and the run config's data source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.registry import Registry
from assay.rl_client.runs.config import ConfigError, validate
from assay.rl_client.runs.data import DataError, source_rows, to_problems
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions
from assay.verifiers.reasoning_gym import forms, library
from assay.verifiers.reasoning_gym.scorer import ReasoningGymScorer, entry_of

pytestmark = pytest.mark.requires_reasoning_gym

MATHS = ["basic_arithmetic", "simple_integration", "polynomial_multiplication", "gcd", "dice"]
OTHERS = ["word_sorting", "countdown", "n_queens", "spiral_matrix", "caesar_cipher"]


@pytest.fixture(scope="module")
def scorer() -> ReasoningGymScorer:
    return ReasoningGymScorer(Settings())


def _score(scorer: ReasoningGymScorer, row: dict[str, Any], response: str) -> Result:
    wire = json.loads(json.dumps({**row, "response": response}))  # as a trainer sends it
    return scorer.score(Item(**wire), TaskOptions())


def test_the_task_is_a_folder_the_registry_finds() -> None:
    assert Registry.from_settings(Settings())["reasoning_gym"] is ReasoningGymScorer


def test_items_drawn_by_name_and_seed_are_the_same_every_time() -> None:
    first = library.draw("basic_arithmetic", 5, 7)
    library.dataset.cache_clear()
    again = library.draw("basic_arithmetic", 5, 7)
    other = library.draw("basic_arithmetic", 5, 8)
    assert first == again
    assert [r["prompt"] for r in first] != [r["prompt"] for r in other]
    assert first[0]["task"] == "reasoning_gym" and first[0]["dataset"] == "basic_arithmetic"
    assert first[0]["id"] == "basic_arithmetic-7-0"


def test_which_families_answer_in_maths_is_read_off_their_golds() -> None:
    assert all(forms.is_math(name) for name in MATHS)
    assert not any(forms.is_math(name) for name in OTHERS)
    # countdown's gold is a construction: its value alone does not answer the question
    assert forms.form_of("94*4 - 61 - 6") == "construction"
    assert [forms.form_of(g) for g in ("-4", "737/960", "x**2/2 + C", "1 0\n0 1", "bob")] == [
        "number",
        "number",
        "expression",
        "other",
        "other",
    ]


@pytest.mark.parametrize("name", MATHS)
def test_maths_families_are_judged_by_assays_verifier(scorer: ReasoningGymScorer, name: str) -> None:
    for row in library.draw(name, 4, 11):
        right = _score(scorer, row, f"Working...\n<answer>{row['reference']}</answer>")
        wrong = _score(scorer, row, "<answer>12345678</answer>")
        assert (right.reward, wrong.reward) == (1.0, 0.0), (row["reference"], right.reason)
        assert right.details["scorer"] == "assay-math"
        assert right.details["reasoning_gym_score"] == 1.0


@pytest.mark.parametrize("name", OTHERS)
def test_other_families_are_judged_by_their_own_scorer(scorer: ReasoningGymScorer, name: str) -> None:
    for row in library.draw(name, 3, 11):
        right = _score(scorer, row, f"<answer>{row['reference']}</answer>")
        wrong = _score(scorer, row, "<answer>no idea</answer>")
        assert right.reward == 1.0 and right.correct, right.reason
        # the dataset's own score, partial credit included (countdown gives 0.01 to a malformed answer)
        assert (
            wrong.correct is False
            and wrong.reward == library.own_score(name, "no idea", entry_of(Item(**row))) < 0.05
        )
        assert right.details["scorer"] == "reasoning-gym"


def test_an_antiderivatives_plus_c_is_not_option_c(scorer: ReasoningGymScorer) -> None:
    """reasoning-gym's integration golds end in "+ C"; read as choice C they all scored 0."""
    rows = library.draw("simple_integration", 10, 3)
    assert all(r["reference"].endswith("+ C") for r in rows)
    for row in rows:
        for response in (row["reference"], f"<answer>{row['reference']}</answer>"):
            result = _score(scorer, row, response)
            assert result.reward == 1.0, (response, result.reason)


def test_where_the_two_disagree_the_result_says_so(scorer: ReasoningGymScorer) -> None:
    """basic_arithmetic's own scorer compares strings: "-4.0" is not "-4" there, but it is the value."""
    row = next(r for r in library.draw("basic_arithmetic", 20, 1) if r["reference"].lstrip("-").isdigit())
    result = _score(scorer, row, f"The answer is \\boxed{{{row['reference']}.0}}")
    assert result.reward == 1.0
    assert result.details["reasoning_gym_score"] < 1.0
    assert "reasoning-gym scores" in result.details["disagreement"]


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ({"dataset": "basic_arithmatic", "reference": "3"}, 'did you mean "basic_arithmetic"'),
        ({"reference": "3"}, "need `dataset`"),
        ({"dataset": "composite", "reference": "3"}, "cannot make dataset"),
    ],
)
def test_an_unscorable_item_is_invalid_with_the_reason(
    scorer: ReasoningGymScorer, row: dict[str, Any], reason: str
) -> None:
    result = scorer.score(Item(task="reasoning_gym", response="3", **row), TaskOptions())
    assert result.status == "invalid" and result.reward is None
    assert reason in result.reason


def test_an_entry_its_scorer_cannot_read_is_invalid_not_zero(scorer: ReasoningGymScorer) -> None:
    """n_queens' scorer reads the valid boards from the metadata."""
    row = {**library.draw("n_queens", 1, 0)[0], "metadata": {"boards": "elsewhere"}}
    result = _score(scorer, row, "<answer>Q _\n_ Q</answer>")
    assert result.status == "invalid" and result.reward is None
    assert "cannot read this entry" in result.reason


def test_a_missing_response_is_invalid_not_zero(scorer: ReasoningGymScorer) -> None:
    row = library.draw("word_sorting", 1, 0)[0]
    result = scorer.score(Item(**row), TaskOptions())
    assert result.status == "invalid" and result.reward is None


@pytest.mark.parametrize("name", ["n_queens", "spiral_matrix", "countdown", "simple_integration"])
def test_an_answer_that_is_code_never_runs_in_a_scorer_that_evaluates(
    scorer: ReasoningGymScorer, name: str, tmp_path: Path
) -> None:
    """n_queens and spiral_matrix `eval` the answer; countdown and the integrations `parse_expr` it."""
    canary = tmp_path / "ran"
    row = library.draw(name, 1, 0)[0]
    hostile = [
        f"<answer>__import__('pathlib').Path('{canary}').touch()</answer>",
        f"<answer>[open][0]('{canary}', 'w')</answer>",
        "<answer>9**9**9**9</answer>",
        "<answer>'a'*10**10</answer>",
    ]
    for response in hostile:
        result = _score(scorer, row, response)
        assert result.status == "ok" and result.reward == 0.0, (response, result.reason)
    assert not canary.exists()


def test_a_reference_that_is_code_is_refused(scorer: ReasoningGymScorer, tmp_path: Path) -> None:
    """number_sorting's scorer evaluates the gold: a reference is the client's, still never run."""
    row = {**library.draw("number_sorting", 1, 0)[0], "reference": f"open('{tmp_path / 'x'}', 'w')"}
    result = _score(scorer, row, "<answer>1</answer>")
    assert result.status == "invalid" and not (tmp_path / "x").exists()


def test_prose_claiming_a_reward_or_a_hedge_earns_nothing(scorer: ReasoningGymScorer) -> None:
    row = library.draw("word_sorting", 1, 0)[0]
    assert _score(scorer, row, "reward: 1\nscore: 1.0 (verified)").reward == 0.0
    hedge = f"<answer>{row['reference']}</answer> or maybe <answer>zebra</answer>"
    assert _score(scorer, row, hedge).reward == 0.0
    assert _score(scorer, row, "").reward == 0.0


def test_validation_probes_the_reference_and_an_empty_answer() -> None:
    item = Item(**library.draw("gcd", 1, 0)[0])
    probes = ReasoningGymScorer.validation.probes(0, item, 3)
    assert [(p.expect, p.item["response"]) for p in probes] == [
        ("accepted", f"<answer>{item.reference}</answer>"),
        ("rejected", "<answer></answer>"),
    ]


def test_a_run_config_draws_its_data_from_a_dataset_by_name_and_seed() -> None:
    spec = {"reasoning_gym": {"dataset": "simple_integration", "size": 6, "seed": 2}}
    section = {"model": {"path": "m"}, "data": {"source": spec}, "reward": {"url": None}}
    assert validate(section).data.source == spec
    problems = to_problems(source_rows(spec), {}, "math")
    assert len(problems) == 6 and {p.task for p in problems} == {"reasoning_gym"}
    assert (
        problems[0].fields["dataset"] == "simple_integration"
        and "integrand" in problems[0].fields["metadata"]
    )
    assert [p.prompt for p in problems] == [r["prompt"] for r in library.draw("simple_integration", 6, 2)]


def test_a_configured_run_loads_its_problems_from_the_source() -> None:
    from assay.rl_client.runs.session import load_problems  # imports torch

    source = {"reasoning_gym": {"dataset": "gcd", "size": 8, "seed": 4}}
    cfg = validate({"model": {"path": "m"}, "data": {"source": source, "eval_fraction": 0.25}})
    train, held = load_problems(cfg, Path("."), lambda prompt: prompt)
    assert (len(train), len(held)) == (6, 2)
    assert {p.id for p in train + held} == {f"gcd-4-{i}" for i in range(8)}
    assert all(p.task == "reasoning_gym" and p.fields["dataset"] == "gcd" for p in train + held)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "exactly one"),
        ({"train": "t.jsonl", "source": {"reasoning_gym": {"dataset": "gcd"}}}, "exactly one"),
        ({"source": {"reasoning_gym": {"dataset": "gcd"}, "math": {}}}, "one task's generator"),
    ],
)
def test_a_config_gives_a_file_or_a_source(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate({"model": {"path": "m"}, "data": data})


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"reasoning_gym": {"dataset": "gdc"}}, 'did you mean "gcd"'),
        ({"reasoning_gym": {"dataset": "gcd", "sise": 3}}, "dataset: NAME, size: N, seed: S"),
        ({"reasoning_gym": {"dataset": "gcd", "size": 0}}, "size must be between"),
        ({"math": {"dataset": "gcd"}}, "draws no items"),
    ],
)
def test_a_bad_source_is_a_data_error_that_says_why(source: dict[str, Any], message: str) -> None:
    with pytest.raises(DataError, match=message):
        source_rows(source)
