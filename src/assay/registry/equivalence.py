"""A task's notion of answer equivalence: when two extracted answers are one answer (issue 42).

Answer clusters and majority votes over a group (`assay.groups.clusters`) merge members whose answers the
task's own verifier judges equivalent: `1/2`, `0.5` and `\\frac12` are one math answer, which a vote over
strings would split three ways. A task declares its notion as `Scorer.equivalence`; this base has none,
and a group of such a task reports its clusters as unavailable with `why_not`.

Three verbs, cheapest first: `key` maps an answer to a canonical key (equal keys are one answer; None: no
key); `signature` to a necessary condition (different signatures are different answers: a fingerprint);
`equivalent` decides a pair the keys left apart and the signatures did not. With G = 64 answers pairwise
comparison is up to 2,016 calls, so a task with good keys and signatures pays for few of them.

A task whose answers are judged by what they do rather than by their text (`by_outcome`: the code task,
whose programs are one answer when their outputs on the tests are) keys each member by its scored result
instead (`outcome_key`): scoring already ran the program, so nothing is compared and nothing runs again.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from collections.abc import Set as AbstractSet
from typing import Any, ClassVar

from assay.types import Item, Result


class Equivalence:
    """How a task tells when two of its answers are the same answer. This base knows none."""

    available: ClassVar[bool] = False
    why_not: ClassVar[str] = "the task has no notion of answer equivalence"
    by_outcome: ClassVar[bool] = False

    def within(self, scorer: Any, item: Item, options: Any) -> Equivalence:
        """The equivalence for one group, whose first item is `item` with validated `options`: a task whose
        verdict needs the group's context (its database) binds it here; `scorer` is the task's scorer
        instance where the clustering runs (a worker for a process-run task). This base needs none."""
        return self

    def answer(self, item: Item) -> str | None:
        """The answer `item`'s response gives, read without a reference (self-consistency votes on items
        that have none); None: no answer."""
        return None

    def key(self, answer: str) -> Hashable | None:
        """A canonical key: answers with equal keys are equivalent. None: no key (compared pairwise)."""
        return None

    def signature(self, answer: str) -> Hashable | None:
        """A necessary condition: answers whose signatures differ are never equivalent, so they are not
        compared (an expression's value at a fixed point). None: none (compared with every answer)."""
        return None

    def equivalent(self, a: str, b: str) -> bool:
        """Whether `a` and `b` are one answer (symmetric). Called only for pairs whose keys differ and
        whose signatures do not."""
        return a == b

    def judged_wrong(self, answers: AbstractSet[str]) -> None:
        """The answers the group's scoring judged wrong against its reference (none of them judged right
        in another member), told to a bound equivalence before its first comparison. A task may compare
        two of these by a cheaper standard than the one it holds an answer to for a reward (the sql task:
        results on the item's own database only): a wrong answer earns nothing whichever cluster it joins.
        This base ignores them."""

    def outcome_key(self, result: Result) -> Hashable | None:
        """With `by_outcome`: the key of a member's scored result (an ok one with an answer); equal keys
        are one answer and different keys are not. None: the member is an answer of its own."""
        return None


class MutualVerdicts(Equivalence):
    """Two answers are one when the task's own scoring judges each correct with the other as the reference
    (the sql task: result equality on the group's database, with every guard of scoring). Costs two
    scorings per pair, so the key of the task's equivalence (`key`) goes first; `score(item, options)` is
    the task's scoring, which may keep what one call's scorings share (the sql task's query memo)."""

    available: ClassVar[bool] = True

    def __init__(
        self,
        score: Callable[[Item, Any], Result] | Any,
        item: Item,
        options: Any,
        key: Callable[[str], Hashable | None],
    ) -> None:
        # a scorer itself, as a plugin written before `score` could be a function passes it: its `score`
        self._score = score if callable(score) else score.score
        self._item, self._options, self._key = item, options, key

    def key(self, answer: str) -> Hashable | None:
        return self._key(answer)

    def signature(self, answer: str) -> Hashable | None:
        return None

    def equivalent(self, a: str, b: str) -> bool:
        for reference, response in ((a, b), (b, a)):
            probe = self._item.model_copy(update={"response": response, "reference": reference})
            if self._score(probe, self._options).correct is not True:
                return False
        return True
