"""The `math` scorer: extract (extract.py) -> normalise and classify (normalise.py, values.py) -> compare
(compare.py, symbolic.py), with the parsed gold cached per reference.

Runs in the killable worker pool (runs_in = "process"): the pool enforces the per-item deadline, so no
SIGALRM timeouts are used anywhere (math-verify's fail off the main thread: its issues #11, #50, #55). A
deadline is `timeout`, a reference that cannot be used is `invalid`, a missing or hedged answer is an
incorrect verdict, and nothing here raises.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from typing import Any, ClassVar

from pydantic import Field

from assay.registry import Audit, Equivalence, Scorer, Validation
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions
from assay.verifiers.math import audit as math_audit
from assay.verifiers.math import probes, symbolic
from assay.verifiers.math.choices import prompt_options
from assay.verifiers.math.compare import Decision, GoldUnusable, Policy, compare
from assay.verifiers.math.equivalence import MathEquivalence
from assay.verifiers.math.extract import Extraction, NoAnswer, extract, opens_with_cue
from assay.verifiers.math.formulas import find_boxes
from assay.verifiers.math.normalise import ONE_LETTER_UNITS, strip_units
from assay.verifiers.math.prompt import (
    asks_for_percent,
    decimal_comma,
    has_ambiguous_comma,
    restated_ending,
    restates_prompt,
    with_decimal_points,
)
from assay.verifiers.math.values import Atom, Seq, Text, Value, describe, kind_of, parse_value

log = logging.getLogger(__name__)

MAX_REFERENCE_CHARS = 20_000  # a whole worked solution may be the reference
# Two boxes with more than three words between them are not one list of answers.
_BOXES_APART_RE = re.compile(r"\}[^{}]*?(?:[a-zA-Z]+[^a-zA-Z{}]+){4,}[^{}]*?\\boxed")
_PROSE_RE = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}\b")
# A short reference that states its value in a sentence ("The number is 4."): read by the extractor.
_STATES_RE = re.compile(r"\b(?:is|are|was|equals)\b", re.IGNORECASE)
MAX_ANSWER_CHARS = 2_000
# Extraction rules whose answer is marked as the response's own (a box, an answer tag): never a restatement.
_OWN_CLAIM_RULES = frozenset({"boxed", "answer-tag", "final-answer-cue", "correction-cue"})


class MathOptions(TaskOptions):
    rel_tol: float | None = Field(
        None,
        ge=0,
        le=0.5,
        description="Relative tolerance for decimal answers (default: settings.math.rel_tol).",
    )
    allow_percent: bool = Field(
        True,
        description='Let "50%" equal 0.5 (and 0.5 a gold "50%"); off: a percent equals only a percent.',
    )
    strip_units: bool = Field(
        True,
        description='Drop unit words after a bare number ("20 cm" -> 20); off: a unit the gold states must be'
        ' stated ("10 km" is not answered by "10").',
    )
    ordered_lists: bool = Field(
        False,
        description='A list answer ("1, 3, 2") equals a list gold only in its order; off: a bare list is read'
        " as its elements (a set gold is unordered either way).",
    )


def _unit_words(unit: str) -> bool:
    """Whether the tail `strip_units` took off a gold is unit words, not a lone variable."""
    return bool(re.search(r"[a-zA-Z]{2,}", unit)) or unit.strip() in ONE_LETTER_UNITS


@lru_cache(maxsize=4096)
def gold_answer(reference: str) -> str:
    """The answer a reference states. A worked solution (MATH style) states it in its own `\\boxed{}`
    (several boxes are one list); a reference written as prose with formulas, one line that opens with an
    answer cue ("The answer is 33") or one sentence that states a number ("The number is 4.") goes
    through the extractor;
    anything else is the answer as written."""
    boxes = list(dict.fromkeys(find_boxes(reference)))
    if len(boxes) > 1 and _BOXES_APART_RE.search(reference):
        boxes = boxes[-1:]  # boxes far apart in a solution: its last box is the answer
    if boxes:
        return ", ".join(boxes)
    prose = len(_PROSE_RE.findall(reference))
    worked = prose >= 6 or opens_with_cue(reference)  # a solution, or "The answer is 33"
    stated = prose >= 2 and "\n" not in reference and _STATES_RE.search(reference)  # "The number is 4."
    if worked or stated:
        found = extract(reference, MAX_REFERENCE_CHARS)
        if isinstance(found, Extraction) and (worked or re.search(r"\d", found.answers[-1])):
            return found.answers[-1]
    return reference


@lru_cache(maxsize=4096)
def parse_gold(reference: str, units: bool = True) -> Value:
    """The gold's structured form, parsed once per reference (a group of G responses shares one).

    An expression gold is also converted to sympy here, so an unusable reference is found before any
    response is compared (GoldUnusable). With `units` off (`strip_units: false`) a unit the gold states
    is part of its value, so an answer must state it too (eval-protocol's `require_units`: before, the
    gold "10 km" lost its unit while the answer kept it, so "10" was right and "10 km" wrong).
    """
    gold = parse_value(gold_answer(reference))
    written = gold.raw if isinstance(gold, Text) else gold.text if isinstance(gold, Atom) else ""
    if units and written and (bare := strip_units(written)) != written and _unit_words(written[len(bare) :]):
        unitless = parse_value(
            bare
        )  # "\\frac{1}{2}\\text{ inches}", "5\\text{ cm}": the number is the answer
        gold = unitless if isinstance(unitless, Atom) and unitless.number is not None else gold
    if isinstance(gold, Atom) and gold.number is None:
        try:
            symbolic.to_sympy(gold.text)
        except symbolic.TooCostly:
            pass  # a costly gold can still equal an answer written the same way (string fast path)
        except ValueError as exc:
            raise GoldUnusable(str(exc)) from exc
    return gold


def _boxes_as_one_list(gold: Value, boxes: tuple[str, ...], policy: Policy) -> Decision | None:
    """ "The solutions are $\\boxed{2}$ and $\\boxed{3}$" answers a gold that is a list or set of values;
    for any other gold, several different boxes stay a hedge."""
    named = isinstance(gold, Seq) and all(isinstance(v, Atom) and v.var for v in gold.items)
    if (
        not (isinstance(gold, Seq) and (gold.kind in ("list", "set") or named))
        or sum(map(len, boxes)) > MAX_ANSWER_CHARS
    ):
        return None
    try:
        decision = compare(gold, parse_value(", ".join(boxes)), policy)
    except GoldUnusable:
        return None
    return Decision(True, f"the boxes as one list: {decision.rule}") if decision.correct else None


def _comma_reading(prompt: str | None, found: Extraction | NoAnswer, reference: str) -> str | None:
    """How an ambiguous "1,22" in the answer or the gold is read (prompt.decimal_comma), None if none."""
    answers = found.answers if isinstance(found, Extraction) else ()
    if not any(has_ambiguous_comma(text) for text in (*answers, reference)):
        return None
    reason = decimal_comma(prompt, found.rule if isinstance(found, Extraction) else "")
    return reason or "list: 1,22 is read as the list 1, 22 (no prompt or language says decimal comma)"


def _same_digits_with_point(reference: str, found: Extraction) -> bool:
    """ "1.22" for a gold "1,22" that nothing says is a decimal: the gold reads as the list 1, 22 or the
    number 1.22, and an answer that writes exactly its digits with a point where its comma is took the
    second reading (a list answer writes its comma). Only that one spelling, so no other number gains,
    and only two digits after the comma (a price or a measure: "2,74"), never a list of small values
    written without a space ("2,5" stays the roots 2 and 5: a wrong 2.5 must not match them)."""
    if len(found.answers) != 1 or not has_ambiguous_comma(reference) or has_ambiguous_comma(found.answers[0]):
        return False
    answer = re.sub(r"^\$|\$$", "", found.answers[0].strip()).strip()
    return (
        "," in reference
        and answer == with_decimal_points(reference.strip())
        and re.fullmatch(r"[-+]?\d{1,3}\.\d{2}", answer) is not None
    )


class MathScorer(Scorer[MathOptions]):
    name: ClassVar[str] = "math"
    description: ClassVar[str] = "Final answer of a chain of thought vs a gold answer (LaTeX or text)."
    Options: ClassVar[type[TaskOptions]] = MathOptions
    item_fields: ClassVar[tuple[str, ...]] = ("response", "reference")
    runs_in = "process"
    baselines: ClassVar[tuple[str, ...]] = ("math-verify",)  # `assay bench` runs it beside the task
    # latex2sympy/math-verify log noisily on unparsable input; a failed parse is a verdict here.
    quiet_loggers = ("math_verify", "latex2sympy2_extended")
    validation: ClassVar[Validation] = probes.MathValidation()
    audit: ClassVar[Audit] = math_audit.MathAudit()
    equivalence: ClassVar[Equivalence] = MathEquivalence()  # answer clusters (equivalence.py)

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        # A worker builds its scorer at start-up, outside any item's deadline: pay for importing sympy
        # and the LaTeX parser there, not inside the first item that needs them (a cold worker took
        # 3-4.6 s on such an item against a 5 s deadline).
        symbolic.warm_up()
        # Likewise the extractor's one pattern for the answer cues of every language (50 ms to compile).
        extract("答案: 1", settings.math.max_response_chars)

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: MathOptions) -> float:
        return settings.math.deadline_s

    def score(self, item: Item, options: MathOptions) -> Result:
        try:
            return self._score(item, options)
        except RecursionError:
            return Result.verdict(False, "the answer is nested too deeply to read")
        except Exception as exc:  # total: a bug in a rule must not crash the worker or lose the batch
            log.exception("math scorer failed")
            return Result.error(f"math scorer failed: {type(exc).__name__}: {exc}")

    def _policy(self, options: MathOptions, prompt: str | None, worked: str | None) -> Policy:
        rel_tol = options.rel_tol if options.rel_tol is not None else self.settings.math.rel_tol
        return Policy(
            rel_tol=rel_tol,
            percent=options.allow_percent,
            units=options.strip_units,
            ordered_lists=options.ordered_lists,
            percent_question=asks_for_percent(prompt) or asks_for_percent(worked),
            options=tuple(prompt_options(prompt).items()) if prompt else (),
        )

    def _extract(self, item: Item) -> Extraction | NoAnswer:
        """The response's final answer; a closing sentence that only repeats a sentence of the prompt is
        no claim of the response's own, so the answer is looked for before it (prompt.restated_ending)."""
        max_chars = self.settings.math.max_response_chars
        found = extract(item.response or "", max_chars)
        if not isinstance(found, Extraction) or found.rule in _OWN_CLAIM_RULES:
            return found
        shorter = restated_ending(item.prompt, item.response or "")
        if shorter is None:
            return found
        before = extract(shorter, max_chars)
        if isinstance(before, Extraction):
            return before
        return NoAnswer("the closing sentence only restates the prompt, and nothing before it is an answer")

    def _score(self, item: Item, options: MathOptions) -> Result:
        reference = (item.reference or "").strip()
        if not reference:
            return Result.invalid("math items need a non-empty reference")
        if len(reference) > MAX_REFERENCE_CHARS:
            return Result.invalid(f"the reference is longer than {MAX_REFERENCE_CHARS} characters")
        if item.response is None:
            return Result.invalid("math items need a response")
        found = self._extract(item)
        comma = _comma_reading(item.prompt, found, reference)
        if comma and comma.startswith("decimal comma: the prompt"):
            reference = with_decimal_points(reference)  # the gold is written in the prompt's convention
        try:
            gold = parse_gold(reference, options.strip_units)
        except GoldUnusable as exc:
            return Result.invalid(f"cannot use the reference {reference[:80]!r}: {exc}")
        if not isinstance(found, Extraction):
            return Result.verdict(
                False, found.reason, details={"rule": "no-answer", "gold_kind": kind_of(gold)}
            )
        if comma and comma.startswith("decimal comma"):
            found = Extraction(tuple(with_decimal_points(a) for a in found.answers), found.rule)
        # A worked reference that speaks of a percentage asks for one as a prompt would (math-verify's
        # suite: a MATH solution "Let the percentage of ... be $x$" with the gold 20 answered "20%").
        worked = reference if gold_answer(reference) != reference else None
        policy = self._policy(options, item.prompt, worked)
        result = self._judge(gold, found, policy)
        if comma and not result.correct and _same_digits_with_point(reference, found):
            rule = "decimal comma: the answer writes the gold's own digits with a decimal point"
            details = {**(result.details or {}), "rule": rule}
            result = Result.verdict(
                True, f"equivalent to the reference ({rule})", extracted=found.answers[-1], details=details
            )
        if comma:
            result = result.model_copy(update={"details": {**(result.details or {}), "decimal_comma": comma}})
        if result.correct and restates_prompt(item.prompt, item.response, found.answers[-1]):
            details = {**(result.details or {}), "rule": "restates-prompt"}
            reason = "the response only restates the question and ends on a number from it (restates-prompt)"
            return Result.verdict(False, reason, extracted=result.extracted, details=details)
        return result

    def _judge(self, gold: Value, found: Extraction, policy: Policy) -> Result:
        details: dict[str, Any] = {
            "extraction": found.rule,
            "gold_kind": kind_of(gold),
            "gold": describe(gold),
        }
        decisions: list[Decision] = []
        answers: list[str] = []
        for raw in dict.fromkeys(found.answers):  # the same box twice is one answer
            if len(raw) > MAX_ANSWER_CHARS:
                decisions.append(Decision(False, f"answer longer than {MAX_ANSWER_CHARS} characters"))
                answers.append(raw[:80] + "...")
                continue
            answer = parse_value(raw)
            answers.append(describe(answer))
            try:
                decisions.append(compare(gold, answer, policy))
            except GoldUnusable as exc:
                return Result.invalid(f"cannot use the reference: {exc}", details=details)
        details["answer"] = answers[0] if len(answers) == 1 else answers
        extracted = found.answers[-1]
        if len(decisions) > 1 and not all(d.correct for d in decisions):
            boxes = tuple(dict.fromkeys(found.answers))
            if joined := _boxes_as_one_list(gold, boxes, policy):
                details["rule"] = joined.rule
                reason = f"equivalent to the reference ({joined.rule})"
                return Result.verdict(True, reason, extracted=", ".join(boxes), details=details)
            details["rule"] = "hedge: several different boxed answers"
            return Result.verdict(
                False, "several different boxed answers (a hedge)", extracted=extracted, details=details
            )
        decision = decisions[-1]
        details["rule"] = decision.rule
        reason = "equivalent to the reference" if decision.correct else "not equivalent to the reference"
        return Result.verdict(
            decision.correct, f"{reason} ({decision.rule})", extracted=extracted, details=details
        )
