"""The code task's notion of answer equivalence, for answer clusters and majority votes (issue 42).

Two programs are one answer when they produce identical outputs on the item's tests, visible and hidden:
what scoring observed when it ran them in the sandbox, so clustering compares results and runs nothing
again. What counts as one test's output:

- a passed test: the expected output (the checker accepted it; with the float checker, every output
  within tolerance of it is that one output);
- a failed stdin/stdout test: stdout as the checker reads it: its tokens (`tokens`, `float`: compared
  exactly here, since a tolerance does not partition outputs) or its exact text (`exact`); its raw bytes
  when it is not UTF-8;
- a failed call test: the returned value as JSON, a whole float read as its integer (`1.0` is `1`, as
  the checker counts it);
- a failed assert test: only that it failed. Assert tests report no output (the evaluator judges inside
  the sandbox), so two programs failing one assert test in different ways agree on it.

A program that did not end a test normally (runtime error, time, memory or output limit, a compile
error, a test not run after `stop_on_first_failure`) has no output to compare there: it is an answer of
its own. The scorer records one digest of a program's outputs, `details["outputs_digest"]`, keyed with a
secret of its own instance: it tells programs apart within one server, where a group is clustered, and
reveals nothing of what the hidden tests print, even to someone who guesses it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

from assay.registry.equivalence import Equivalence
from assay.sandbox import PASSED, WRONG_ANSWER
from assay.types import Result

DIGEST = "outputs_digest"  # the key of `details` the digest is recorded under


def observation(verdict: str, kind: str, stdout: bytes, returned: Any, checker: str) -> Hashable | None:
    """One test's output as the module docstring defines it, or None when it has none to compare.
    `kind` is the test's (`stdout`, `json`, `harness`); `returned`, a failed call test's `call_result`."""
    if verdict == PASSED:
        return ("passed",)
    if verdict != WRONG_ANSWER:
        return None
    if kind == "harness":
        return ("failed",)
    if kind == "stdout":
        try:
            text = stdout.decode("utf-8")
        except UnicodeDecodeError:
            return ("bytes", stdout.hex())
        return ("text", text) if checker == "exact" else ("tokens", tuple(text.split()))
    if not isinstance(returned, dict) or "ok" not in returned:  # no value crossed: nothing to compare
        return None
    return ("value", json.dumps(_whole(returned["ok"]), sort_keys=True))


def outputs_digest(observed: Sequence[Hashable | None], total: int, key: bytes) -> str | None:
    """The keyed digest of a program's outputs on all `total` tests; None unless each has one."""
    if len(observed) != total or any(o is None for o in observed):
        return None
    return hashlib.blake2b(json.dumps(observed).encode(), key=key, digest_size=16).hexdigest()


def _whole(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_whole(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    return value


class CodeEquivalence(Equivalence):
    """Output identity on the tests, read from each member's scored result (`by_outcome`)."""

    available: ClassVar[bool] = True
    by_outcome: ClassVar[bool] = True

    def outcome_key(self, result: Result) -> Hashable | None:
        digest = result.details.get(DIGEST)
        return ("outputs", digest) if isinstance(digest, str) else None
