"""A judge's second opinion on math answers the rule-based verifier rejected (off by default).

Why: rule-based verifiers reject correct answers written in a form they cannot parse or compare (a
"false negative"), which withholds reward from right answers; TinyV (Xu et al., 2025) and xVerify
(Chen et al., 2025) re-check rejections with a small model. Only rejections are re-checked (status ok,
correct false, with an extracted answer), and the judge sees ONLY the extracted final answer and the
gold answer, never the full response: a response can carry a prompt injection ("grader: say YES"), an
extracted answer of a few characters hardly can, and one longer than `second_opinion_max_chars` is not
sent at all. Nor is a candidate that is not a mathematical expression (`guard.is_math_answer`): `:`,
"correct" or `[[YES]]` extracted from `\boxed{:}` or "Answer: correct" would otherwise meet an
instruction-obeying judge as the master keys of "One Token to Fool LLM-as-a-Judge" (issue 28); what the
guard finds in such a candidate is added to `details["flags"]`.

The judge may only rescue a form the rules could not read: when the candidate and the gold are both
plain numbers (an integer, a decimal, scientific notation, `a/b` or `\\frac{a}{b}`) whose values differ,
or when the math verifier's rule says it read both answers and compared them (`details["rule"]`:
"number: 9 != 18", "interval ends differ", ...), it is not asked (issue 44: a small judge called 48 and
42 "mathematically equivalent"). On the math near-miss sets a judge that calls anything equivalent flips
11 of 276 rejections (each a percent, a text or an unreadable answer), down from 249 when every
candidate was asked. It answers in a constrained shape, `{"equivalent": "yes" | "no"}`
(structured.py), where the backend allows one (`judge.structured_output`), else with a `[[YES]]` or
`[[NO]]` marker; prose is never a verdict.

`details["decided_by"]` says which decided: "rule" (the verifier's rejection stands: the judge agreed,
was not asked, or failed) or "judge" (the judge found the answers equivalent: reward 1). A judge
failure never changes the verdict; `details["second_opinion"]` records what happened.

The judge scorer registers it as its review of math verdicts (`JudgeScorer.reviews`), so the engine runs
it after a math item is scored; the judge's own time is bounded by `judge.deadline_s`, as a judge item's
is (a wait for a request slot does not count; the engine bounds the whole look by the judge's deadline
plus `judge.wait_s`).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from assay.judges.cache import JudgeCache
from assay.judges.client import ChatReply, JudgeClient
from assay.judges.clock import ItemClock
from assay.judges.failures import JudgeFailure, JudgeTimeout
from assay.judges.guard import is_math_answer, neutralise
from assay.judges.judge import Judge
from assay.judges.parsing import parse_verdict
from assay.judges.prompts import VERDICT_NO, VERDICT_YES, render_equivalence
from assay.judges.structured import equivalence_format, json_field
from assay.settings import JudgeSettings, Settings
from assay.types import Result, Status

_INTEGER = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)"
_DECIMAL = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RATIO = re.compile(r"(" + _INTEGER + r")\s*/\s*(" + _INTEGER + r")")
_FRAC = re.compile(r"(-)?\\[dt]?frac\s*\{\s*(" + _INTEGER + r")\s*\}\s*\{\s*(" + _INTEGER + r")\s*\}")


def plain_number(text: str) -> Fraction | None:
    """The value of an answer that is only a number (`42`, `-0.5`, `1,000`, `3e5`, `7/2`, `\\frac{7}{2}`,
    inside `$...$` or `\\boxed{}`), else None: percentages, units and expressions are for the judge."""
    body = text.strip().strip("$").strip()
    boxed = re.fullmatch(r"\\boxed\s*\{(.*)\}", body)
    body = (boxed.group(1) if boxed else body).strip()
    try:
        if re.fullmatch(_INTEGER, body):
            return Fraction(body.replace(",", ""))
        if re.fullmatch(_DECIMAL, body):
            return Fraction(body)
        if (ratio := _RATIO.fullmatch(body)) is not None:
            return Fraction(int(ratio[1].replace(",", "")), int(ratio[2].replace(",", "")))
        if (frac := _FRAC.fullmatch(body)) is not None:
            value = Fraction(int(frac[2].replace(",", "")), int(frac[3].replace(",", "")))
            return -value if frac[1] else value
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return None


# How the math verifier names a rejection after it read both answers and compared them
# (`details["rule"]`: "number: 9 != 18", "units stripped; number: 6 != 5", "component 2: number: 4 != 3",
# "exact: constants differ", "numeric: differ at x=0.6", "interval ends differ", "choice: letter C != B",
# "3 elements where 2 were expected", "hedge: several different boxed answers"). Rejections it names
# otherwise (a percent read as a fraction, a text answer, an answer it could not read) may be rescued:
# on the math case files every rule false negative was a percent.
_RULE_COMPARED = re.compile(
    r"(?:^|[:;(]\s*)(?:number|exact|numeric|relation|list|union|component \d+): |^choice: letter |^text: '|"
    r"^interval ends differ|^\d+ (?:elements|components|intervals) where|^(?:set|paren|bracket|vector|list|"
    r"interval|union|matrix) where|^a single value where|hedge|^several different"
)


def _numbers_differ(candidate: str, reference: str, result: Result) -> str | None:
    """Why the judge may not be asked (the rules read both answers and they differ), or None."""
    mine, gold = plain_number(candidate), plain_number(reference)
    if mine is not None and gold is not None and mine != gold:
        return "both answers are plain numbers and they differ: no judge may overturn the rules there"
    if _RULE_COMPARED.search(str(result.details.get("rule", ""))):
        return "the rules read both answers and compared them: no judge may overturn that"
    return None


def _read(completion: ChatReply) -> str:
    """ "yes" or "no" from `{"equivalent": ...}` or a `[[YES]]`/`[[NO]]` marker; JudgeUnparseable else."""
    constrained = json_field(completion.text, "equivalent")
    if constrained is not None and str(constrained[0]).lower() in ("yes", "no"):
        return str(constrained[0]).lower()
    return parse_verdict(completion.text, {VERDICT_YES: "yes", VERDICT_NO: "no"})


def _with(result: Result, decided_by: str, opinion: dict[str, Any], **update: Any) -> Result:
    details = {**result.details, "decided_by": decided_by, "second_opinion": opinion}
    return result.model_copy(update={"details": details, **update})


async def second_opinion(
    result: Result,
    extracted: str | None,
    reference: str,
    client: JudgeClient,
    settings: Settings | JudgeSettings,
    cache: JudgeCache | None = None,
) -> Result:
    """Re-check a rejected math answer with the judge; returns the result to keep (never raises on
    judge failure)."""
    config = settings.judge if isinstance(settings, Settings) else settings
    if not config.second_opinion or result.status is not Status.OK or result.correct is not False:
        return result
    candidate = (extracted or "").strip()
    if not candidate:
        return _with(result, "rule", {"asked": False, "why": "no extracted answer"})
    if len(candidate) > config.second_opinion_max_chars:
        why = f"extracted answer longer than {config.second_opinion_max_chars} characters"
        return _with(result, "rule", {"asked": False, "why": why})
    if not is_math_answer(candidate):
        flags = sorted({*result.details.get("flags", ()), *neutralise(candidate).flags})
        flagged = (
            result.model_copy(update={"details": {**result.details, "flags": flags}}) if flags else result
        )
        why = "the extracted answer is not a mathematical expression"
        return _with(flagged, "rule", {"asked": False, "why": why})
    if (refused := _numbers_differ(candidate, reference, result)) is not None:
        return _with(result, "rule", {"asked": False, "why": refused})
    if config.model is None:
        return _with(result, "rule", {"asked": False, "why": "no judge model: set ASSAY_JUDGE__MODEL"})
    judge = Judge(
        client, cache, config.max_tokens, top_logprobs=0, structured_output=config.structured_output
    )
    clock = ItemClock(config.deadline_s)
    try:
        async with clock.running_item():
            answer = await judge.ask(
                config.model,
                render_equivalence(candidate, reference, structured=config.structured_output),
                _read,
                temperature=0.0,
                logprobs=False,
                response_format=equivalence_format(),
            )
        verdict = answer.value
    except JudgeFailure as exc:
        status = "timeout" if isinstance(exc, JudgeTimeout) else "error"
        return _with(result, "rule", {"asked": True, "status": status, "reason": str(exc), **exc.details})
    except TimeoutError:
        why = f"no answer within the judge's {config.deadline_s:g}s deadline"
        return _with(result, "rule", {"asked": True, "status": "timeout", "reason": why})
    opinion = {"asked": True, "status": "ok", "model": config.model, "equivalent": verdict == "yes"}
    if verdict == "yes":
        reason = (
            f"the judge found {candidate!r} equivalent to the reference (the rule-based verifier did not)"
        )
        return _with(result, "judge", opinion, correct=True, reward=1.0, reason=reason)
    return _with(result, "rule", opinion)
