"""The sql task's validation probes: the gold query must be accepted (and return rows, or any query that
returns nothing is rewarded); an empty response and `SELECT 1` must earn nothing. A gold that passes is
then checked for a result that depends on storage order (`storage_order`)."""

from __future__ import annotations

from assay.registry import Finding, Recheck, Validation, ValidationProbe
from assay.settings import Settings
from assay.types import Item, Result

MOST = 3


class SqlValidation(Validation):
    def most(self, repeats: int) -> int:
        return MOST

    def probes(self, index: int, item: Item, repeats: int) -> list[ValidationProbe]:
        found = []
        if item.reference:
            gold = f"```sql\n{item.reference.strip()}\n```"
            found.append(ValidationProbe.answer(index, item, gold, "accepted", "the gold query"))
        trivial = (("an empty response", ""), ("SELECT 1", "```sql\nSELECT 1\n```"))
        return found + [
            ValidationProbe.answer(index, item, text, "rejected", label) for label, text in trivial
        ]

    def read_reference(self, result: Result) -> list[Finding]:
        rows = [i.get("reference_rows") for i in result.details.get("instances", [])]
        if rows and all(n == 0 for n in rows):
            reason = "the gold query returns no rows, so any query that returns nothing is rewarded"
            return [Finding("empty_result", reason)]
        return []

    def recheck(self, settings: Settings) -> Recheck | None:
        from assay.verifiers.sql.storage_order import OrderCheck

        return OrderCheck(settings)
