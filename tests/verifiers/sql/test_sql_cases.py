"""The labelled dev set (tests/cases/sql.jsonl) on SQLite and DuckDB: every verdict matches its label.

Dangerous cases also check that no database file changed and that nothing was written next to them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sql_helpers import as_item, escaped_files, file_hashes, load_cases

from assay.engine.scoring import parse_item
from assay.types import Status
from assay.verifiers.sql import SqlScorer

CASES = load_cases()


def test_case_file_is_well_formed() -> None:
    categories = {case["category"] for case in CASES}
    assert categories == {"equivalent", "mismatch", "alternate", "danger"}
    assert len({case["id"] for case in CASES}) == len(CASES)
    for case in CASES:
        parse_item(as_item(case))  # a contract item once label, category and note are removed
        assert isinstance(case["label"], bool) and case["note"]


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_verdict_matches_label(
    case: dict[str, Any], engine: str, sql_scorer: SqlScorer, sql_dir: Path
) -> None:
    before = (file_hashes(sql_dir), escaped_files()) if case["category"] == "danger" else None
    item = parse_item(as_item(case))
    options = sql_scorer.parse_options({**item.options, "engine": engine})
    result = sql_scorer.score(item, options)
    assert result.status is Status.OK, result.reason
    assert result.correct is case["label"], f"{case['note']}: {result.reason}"
    assert result.reward == (1.0 if case["label"] else 0.0)
    if before is not None:
        assert (file_hashes(sql_dir), escaped_files()) == before, "a file changed or appeared"
