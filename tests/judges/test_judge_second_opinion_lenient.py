"""The math second opinion against the worst judges (issue 44): one that calls anything "equivalent"
(`lenient`), and one that says so in prose as SmolLM2-135M did (`lenient-prose`). It asks for a
structured verdict, never overturns two numbers the rules read as different, and on the math near-miss
sets (tests/cases) a lenient judge flips far fewer rejections than it did when every candidate was asked."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from assay.judges.client import JudgeClient
from assay.judges.guard import is_math_answer
from assay.judges.second_opinion import plain_number, second_opinion
from assay.settings import Settings
from assay.types import Item, Result, Status
from assay.verifiers.math.scorer import MathScorer
from judges.judge_harness import Harness

CASES = Path(__file__).parents[1] / "cases"


def _review(harness: Harness, result: Result, reference: str, model: str = "lenient", **judge: Any) -> Result:
    settings = harness.settings(model=model, second_opinion=True, **judge)
    client = JudgeClient.from_settings(settings.judge)

    async def run() -> Result:
        try:
            return await second_opinion(result, result.extracted, reference, client, settings)
        finally:
            await client.aclose()

    return harness.run(run())


def _rejected(extracted: str, rule: str = "") -> Result:
    return Result.verdict(
        False, "not equivalent to the reference", extracted=extracted, details={"rule": rule}
    )


def test_the_second_opinion_asks_for_a_structured_verdict(harness: Harness) -> None:
    result = _review(harness, _rejected("x + 1"), "1 + x")
    (request,) = harness.judges.requests_for("lenient")
    schema = request["body"]["response_format"]["json_schema"]
    assert schema["name"] == "equivalence_verdict"
    assert schema["schema"]["properties"]["equivalent"]["enum"] == ["yes", "no"]
    assert result.reward == 1.0 and result.details["decided_by"] == "judge"  # {"equivalent": "yes"} read


def test_equivalent_in_prose_is_not_a_verdict(harness: Harness) -> None:
    # SmolLM2-135M on 48 against 42: "mathematically equivalent", in prose, without a marker
    result = _review(harness, _rejected("x + 48"), "42", model="lenient-prose", structured_output=False)
    assert (result.correct, result.reward) == (False, 0.0)
    assert result.details["decided_by"] == "rule"
    assert result.details["second_opinion"]["status"] == "error"


# Two different numbers, written the ways a policy and a data set write them.
def _forms(value: Fraction) -> list[str]:
    forms = [f"{value.numerator}/{value.denominator}", f"\\frac{{{value.numerator}}}{{{value.denominator}}}"]
    if value.denominator == 1:
        forms += [str(value.numerator), f"${value.numerator}$", f"\\boxed{{{value.numerator}}}"]
        if value.numerator >= 1000:
            forms.append(f"{value.numerator:,}")
    if value.denominator in (1, 2, 4, 5, 8, 10):
        forms.append(str(float(value)))
    return forms


_PAIRS = [(Fraction(48), Fraction(42)), (Fraction(1, 2), Fraction(1, 3)), (Fraction(1000), Fraction(100)),
          (Fraction(-7), Fraction(7)), (Fraction(5, 2), Fraction(12, 5))]  # fmt: skip


@pytest.mark.parametrize(("mine", "gold"), _PAIRS)
def test_numbers_that_differ_are_never_overturned(harness: Harness, mine: Fraction, gold: Fraction) -> None:
    for candidate in _forms(mine):
        for reference in _forms(gold):
            assert plain_number(candidate) == mine and plain_number(reference) == gold
            result = _review(harness, _rejected(candidate), reference)
            assert result.reward == 0.0 and result.details["second_opinion"]["asked"] is False
    assert harness.judges.requests_for("lenient") == []


def test_a_rule_that_compared_numbers_is_never_overturned(harness: Harness) -> None:
    for rule in ("number: 9 != 18", "units stripped; number: 6 != 5", "component 2: number: 4 != 3"):
        assert _review(harness, _rejected("x = 9", rule), "18").reward == 0.0
    assert harness.judges.requests_for("lenient") == []


def test_a_form_the_rules_could_not_read_can_still_be_rescued(harness: Harness) -> None:
    rule = "percent: 15% read as 3/20 != 15 (no prompt that asks for a percent)"  # a real rule miss
    assert _review(harness, _rejected("15\\%", rule), "15").reward == 1.0


def _near_misses() -> list[tuple[Result, str]]:
    """The rejections, with an extracted answer, of every near-miss (label false) in the math case files."""
    scorer = MathScorer(Settings())
    out = []
    for name in ("math.jsonl", "math_wild.jsonl"):
        for line in (CASES / name).read_text().splitlines():
            case = json.loads(line)
            if case.get("label") is not False:
                continue
            item = Item(task="math", response=case["response"], reference=case["reference"])
            result = scorer.score(item, scorer.parse_options(case.get("options") or {}))
            if result.status is Status.OK and result.correct is False and (result.extracted or "").strip():
                out.append((result, case["reference"]))
    return out


@pytest.mark.slow
def test_a_lenient_judges_false_positives_on_the_near_miss_sets(harness: Harness) -> None:
    near = _near_misses()
    flipped = [r for r, ref in near if _review(harness, r, ref).reward == 1.0]
    sendable = [r for r, _ in near if len(r.extracted or "") <= 64 and is_math_answer(r.extracted or "")]
    numbers = [r for r in flipped if plain_number(r.extracted or "") is not None]
    print(f"near misses rejected: {len(near)}; a lenient judge was asked about {len(sendable)} before,"
          f" flips {len(flipped)} now")  # fmt: skip
    assert len(flipped) <= 0.05 * len(near)  # measured: 11 of 276 (249 were asked before)
    assert [r.details.get("rule") for r in numbers if "number" in str(r.details.get("rule"))] == []
