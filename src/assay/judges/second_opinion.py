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

`details["decided_by"]` says which decided: "rule" (the verifier's rejection stands: the judge agreed,
was not asked, or failed) or "judge" (the judge found the answers equivalent: reward 1). A judge
failure never changes the verdict; `details["second_opinion"]` records what happened.

The judge scorer registers it as its review of math verdicts (`JudgeScorer.reviews`), so the engine runs
it after a math item is scored; the judge's own time is bounded by `judge.deadline_s`, as a judge item's
is (a wait for a request slot does not count; the engine bounds the whole look by the judge's deadline
plus `judge.wait_s`).
"""

from __future__ import annotations

from typing import Any

from assay.judges.cache import JudgeCache
from assay.judges.client import JudgeClient
from assay.judges.clock import ItemClock
from assay.judges.failures import JudgeFailure, JudgeTimeout
from assay.judges.guard import is_math_answer, neutralise
from assay.judges.judge import Judge
from assay.judges.parsing import parse_verdict
from assay.judges.prompts import VERDICT_NO, VERDICT_YES, render_equivalence
from assay.settings import JudgeSettings, Settings
from assay.types import Result, Status


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
    if config.model is None:
        return _with(result, "rule", {"asked": False, "why": "no judge model: set ASSAY_JUDGE__MODEL"})
    judge = Judge(client, cache, config.max_tokens, top_logprobs=0)
    clock = ItemClock(config.deadline_s)
    try:
        async with clock.running_item():
            answer = await judge.ask(
                config.model,
                render_equivalence(candidate, reference),
                lambda c: parse_verdict(c.text, {VERDICT_YES: "yes", VERDICT_NO: "no"}),
                temperature=0.0,
                logprobs=False,
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
