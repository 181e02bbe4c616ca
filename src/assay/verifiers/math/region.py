"""Where a final answer may be: the response up to its end of turn, after its last `</think>`.

A chat template's tokens are not the policy's text: what a decoder printed after the first end-of-turn
token (`<|im_end|>`, then `<|im_start|>user` and the next turn) must not make a finished answer look cut
off, and trailing special tokens ("18.<|im_end|>") are dropped. A closing paragraph that only checks the
answer ("Check: with x = 4 this gives 5.") is not where the answer is (`without_checks`).
"""

from __future__ import annotations

import re

# Chat-template tokens left at the end of a decoded response ("18.<|im_end|>").
_SPECIAL_TOKENS_RE = re.compile(r"(?:\s*(?:<\|[a-z_]+\|>|</s>|<eos>|<end_of_turn>))+\s*$")
_TURN_END_RE = re.compile(
    r"<\|(?:im_end|im_start|eot_id|endoftext|end|end_of_text|start_header_id)\|>|<end_of_turn>|<start_of_turn>"
)


def final_region(response: str) -> tuple[str, bool]:
    """The text after the last `</think>`, and whether the thinking never closed (truncated)."""
    close = response.rfind("</think>")
    if close >= 0:
        return response[close + len("</think>") :], False
    if "<think>" in response:
        return response, True
    return response, False


def _end_of_turn(text: str) -> str:
    """The response up to its first end-of-turn token: what a decoder printed after it (`<|im_start|>user`,
    the next turn of a chat template) is not the policy's answer and must not make it look cut off."""
    for match in _TURN_END_RE.finditer(text):
        if text[: match.start()].strip():
            return text[: match.start()]
    return _TURN_END_RE.sub("", text)


# GLM-4.1V/4.5V write their final answer between box tokens: the same as a `\boxed{}` (rllm's tests
# write it so); a trailing `<|end_of_box|>` is no end of turn.
_BOX_TOKENS_RE = re.compile(r"<\|begin_of_box\|>(.*?)<\|end_of_box\|>", re.DOTALL)


def strip_turn_tokens(text: str) -> str:
    """The response without what follows its end of turn and without trailing special tokens."""
    if "<|begin_of_box|>" in text:
        text = _BOX_TOKENS_RE.sub(lambda m: f"\\boxed{{{m.group(1).strip()}}}", text)
    return _SPECIAL_TOKENS_RE.sub("", _end_of_turn(text))


# A closing paragraph that checks the answer rather than states it ("Check: with x = 4 this gives 5.").
_CHECK_RE = re.compile(
    r"^[*_#\s]*(?:sanity[- ]check|check(?:ing)?|verification|verify(?:ing)?|double[- ]check(?:ing)?"
    r"|let(?:'s|\s+us|\s+me)\s+(?:verify|check|double[- ]check)|to\s+(?:verify|check))\b",
    re.IGNORECASE,
)


def without_checks(region: str) -> str:
    """The region without closing paragraphs that check the answer: its last number is the check's
    (issue 30: an unboxed answer followed by a sanity-check number was read as that number)."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", region.strip()) if p.strip()]
    kept = len(paragraphs)
    while kept > 1 and _CHECK_RE.match(paragraphs[kept - 1]):
        kept -= 1
    return region if kept == len(paragraphs) else "\n\n".join(paragraphs[:kept])
