"""Rule-blind generated pairs (tests/verifiers/math/math_pairs.py): rewrites of a gold are accepted,
near-misses (and hedges) are rejected, for every gold type and surface form the model draws.

Bounded here (hypothesis, no deadline, a fixed number of examples); benchmarks/math_fuzz.py runs
>= 20,000 pairs and prints the rates per mutation and per rendering.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from math_pairs import draw

from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer

BOUNDED = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def scorer() -> MathScorer:
    return MathScorer(Settings(workers=1, plugins=[]))


def _verdict(scorer: MathScorer, gold: str, response: str, prompt: str | None) -> bool | None:
    result = scorer.score(Item(task="math", response=response, reference=gold, prompt=prompt), MathOptions())
    assert result.status.value == "ok", result.reason
    return result.correct


@pytest.mark.parametrize("label", [True, False], ids=["rewrite-accepted", "near-miss-rejected"])
@given(seed=st.integers(0, 2**32 - 1))
@BOUNDED
def test_a_generated_pair_gets_its_label(scorer: MathScorer, label: bool, seed: int) -> None:
    pair = draw(random.Random(seed), label=label)
    assert _verdict(scorer, pair.gold, pair.response, pair.prompt) is label, (
        pair.kind,
        pair.form,
        pair.gold,
        pair.response[-120:],
    )
