"""The sql task's notion of answer equivalence, for answer clusters and majority votes (issue 42).

Two queries are one answer when their results are equal on the group's database: the scorer itself judges
each query with the other as the gold (`MutualVerdicts`), so the comparison has every guard of scoring
(read-only, bounded, the alternates, the perturbed copies, result equality as compare.py defines it).
Mutual, because a gold's ORDER BY makes the comparison order-sensitive in one direction only. The
scorings of one call share a memo (memo.py): a query met in several pairs runs once per database. The
key is the query's text with its spacing and final semicolon dropped: the same query written twice is
compared once.
"""

from __future__ import annotations

from collections.abc import Hashable
from functools import partial
from typing import Any, ClassVar

from assay.registry.equivalence import Equivalence, MutualVerdicts
from assay.types import Item
from assay.verifiers.sql.memo import QueryMemo
from assay.verifiers.sql.statement import extract_sql

MAX_RESPONSE_CHARS = 100_000  # settings.sql.max_response_chars' default: responses are cut to their tail


class SqlEquivalence(Equivalence):
    available: ClassVar[bool] = True

    def within(self, scorer: Any, item: Item, options: Any) -> Equivalence:
        """One memo per call (memo.py): each distinct query runs once per database however many pairs it
        is in, with the verdicts of scoring the pairs one by one."""
        return MutualVerdicts(partial(scorer.score, memo=QueryMemo()), item, options, self.key)

    def answer(self, item: Item) -> str | None:
        return extract_sql(item.response[-MAX_RESPONSE_CHARS:]) if item.response is not None else None

    def key(self, answer: str) -> Hashable | None:
        return " ".join(answer.split()).rstrip(";").strip()
