"""The repository task's validation probes: the gold change (`patch`) run at least twice, whose verdicts
must agree test by test, and the empty change, which must not be rewarded (a task that rewards doing
nothing, as R2E-Gym found). A task file's row may be a SWE-bench instance (`row`). An item without hidden
tests is warned about (`check_prompt`); named tests that pytest does not collect at the base make the
gold's verdict `invalid`, with the ids, so validation reports them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.registry import Finding, Validation, ValidationProbe
from assay.types import Item, Result
from assay.verifiers.repo.task import RepoFields


class RepoValidation(Validation):
    def row(self, row: dict[str, Any], model: type[Item] = Item) -> dict[str, Any]:
        """A SWE-bench instance is a row too: its problem_statement is the prompt, columns that are not
        fields of `model` dropped."""
        if "prompt" not in row and isinstance(row.get("problem_statement"), str):
            row = {**row, "prompt": row["problem_statement"]}
        return {k: v for k, v in row.items() if k in model.model_fields}

    def check_prompt(self, item: Item) -> list[Finding]:
        """A repo item without a hidden test patch is judged by tests the policy can read: a change that
        special-cases their inputs is only caught by a heuristic (issue 37)."""
        if RepoFields.of(item).test_patch:
            return []
        reason = (
            "no hidden test_patch: the tests that judge a change are visible to the policy, so hard-coding"
            " their inputs passes them (flagged special_cases_test_inputs, rewarded 0 by default)"
        )
        return [Finding("no_hidden_tests", reason, "warning")]

    def most(self, repeats: int) -> int:
        return max(2, repeats) + 1

    def probes(self, index: int, item: Item, repeats: int) -> list[ValidationProbe]:
        found = []
        if gold := RepoFields.of(item).patch:
            found += [
                ValidationProbe.answer(index, item, gold, "accepted", "the gold patch", run)
                for run in range(max(2, repeats))
            ]
        return [*found, ValidationProbe.answer(index, item, "", "rejected", "the empty change")]

    def read_repeats(self, runs: Sequence[Result]) -> list[Finding]:
        """Named tests that fail in some runs of the gold change and pass in others are flaky."""
        failing = [set(r.details.get("not_passed") or {}) for r in runs]
        flaky = sorted(set().union(*failing) - set.intersection(*failing))
        if not flaky:
            return []
        shown = ", ".join(flaky[:5]) + (", ..." if len(flaky) > 5 else "")
        reason = f"tests end differently across {len(runs)} runs of the gold: {shown}"
        return [Finding("nondeterministic", reason)]
