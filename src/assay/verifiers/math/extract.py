"""The one extractor of a final answer from a model's full output (often a long chain of thought).

Order of preference, first hit wins:
1. `\\boxed{...}` / `\\fbox{...}` (nested braces) in the final region. Every box is returned: the
   comparer requires all of them to match, so several different boxes (a hedge) are never rewarded.
   A "Final Answer: ..." stating a value after the last box outranks boxes of intermediate values.
2. The last answer cue: "the (final/correct/best) answer/option/choice is", "**Final Answer**",
   "Answer:", "Final answer:", and GSM8K's "#### 42" line. The answer stops at the end of its clause
   (", because", ", which", ", so", ". ", a parenthetical remark), so "16, because ..." is 16 while a
   list ("3, 5") stays whole, and a second value offered in the rest of the sentence ("2 (or maybe
   3)", "2, but it could also be 3", "3. Actually, wait, it is 4.") keeps the sentence whole so the
   comparer sees the hedge. "The largest $n$ is 34" answers with its predicate (34), and an answer
   written as a sentence with one number ("Jane started 3 hours ago") with that number.
3. The whole final region when it is only an answer (a bare "42", "$x = 3$", "So x = 3."), without a
   short lead-in ("It is 3.", "I got 3", "So we get x = 3", "= 3", "Matrix: $M$").
4. A last line that is only an answer: an option letter ("(C)", "**C**", "C) 24", "... option **(B)**."),
   a bold answer ("**55**"), a lone number, or the one bold value of a last sentence ("Janet makes
   **$18** every day.").
5. The last `$...$`, `$$...$$` or `\\[...\\]` of a final paragraph that concludes ("therefore",
   "thus", "so", "hence") or is only a formula, in a response that does not look cut off.
6. (Tried before 5.) The one number of the last sentence when that sentence states a result
   ("Therefore, Janet makes $18 every day.", "Thus, she reads 8 * 5 = 40 pages."): a full sentence
   that ends the response, holds exactly one number (or a value after its last "="), names no bound
   ("less than 18", "not 18") and does not open as a step or a plan ("Next, ...", "Let ...").
   Never the last number of the text in general.

The final region (region.py) is the text after the last `</think>`, up to the first end-of-turn token.
A `<think>` that never closes means the response was cut off while thinking: only a box counts there.
A response that ends mid-sentence with no box or cue has no answer: its last number is an intermediate
value, not an answer (math-verify 0.9.0 accepted such truncations when the last number happened to
equal the gold).

Boxes and formulas are found by formulas.py (where a dollar before a number in prose is currency).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from assay.verifiers.math.choices import choosing_sentence, judged_letter, read_letters
from assay.verifiers.math.cues import (
    Language,
    find_cues,
    language_of,
    localised_answer,
    offers_value,
    speaker_lead,
)
from assay.verifiers.math.formulas import (
    BOX_RE,
    MATH_SEGMENT_RE,
    find_boxes,
    math_segments,
    segment_text,
    unbold,
)
from assay.verifiers.math.region import final_region, strip_turn_tokens, without_checks
from assay.verifiers.math.sentences import (
    BOUND_WORDS_RE,
    CJK_MAX_BARE,
    CJK_RE,
    GROUP_SEPARATOR_RE,
    NUMBER_TOKEN_RE,
    SPEAKER_LEAD_RE,
    after_rejection,
    answer_label,
    concluding_number,
    doubted_after_cue,
    doubted_label_value,
    ends_short_on_value,
    in_english,
    is_connector,
    labelled_line,
    looks_complete,
    other_values_after,
    paragraphs_of,
    without_trailing_rejection,
    without_trailing_word_rejection,
    word_predicate,
)
from assay.verifiers.math.spelled import number_words, spelled_value

_CUE_RE = re.compile(
    r"(?:\*\*\s*(?:final\s+)?answer\s*:?\s*\*\*\s*:?"
    r"|\bfinal\s+answer\s*(?:is|:|=)"
    r"|\b(?:the|my|our)\s+(?:(?:correct|best|right|final)\s+)?(?:answers?|option|choice|final\s+result)\s+"
    r"(?:is|are|would\s+be|should\s+be|must\s+be)\s*:?"
    r"|\b(?:answer|final\s+result)\s*[:=]"
    r"|(?m:^)[*_\s]*answer\s+(?:is|would\s+be)\b\s*:?"  # a line that opens "answer is 996" (no article)
    r"|\bfinal\s+answer\b)",
    re.IGNORECASE,
)
# GSM8K's final-answer marker ("#### 42", "The result is #### 42"); a heading ("#### Step 2") is not one.
_HASH_RE = re.compile(r"(?:^[ \t]*|(?<=[ \t]))####[ \t]*(?=[-+$\\\d.(])", re.MULTILINE)  # also "is #### 4"
_CONCLUDING_RE = re.compile(
    r"\b(?:therefore|thus|hence|so|consequently|answer|in conclusion|we (?:get|have|find|obtain|conclude)"
    r"|equals|is|are)\b|∴"
    r"|因此|所以|故|得出|得到|于是|从而|即为|したがって|よって|따라서|그러므로",  # the same words in CJK text
    re.IGNORECASE,
)
# Where the answer after a cue ends: the end of its sentence or line, a subordinate clause, a
# parenthetical remark that holds words, or a dash.
_CLAUSE_END_RE = re.compile(
    r"(?<=[^\d\s])\.(?:\s|$)|\.\s|\n|\s[—–]\s|\s--\s"
    r"|,?\s+(?:because|since|which|as|so|where|when|given|but|while|thus|hence|meaning|i\.e\.|e\.g\.)\b"
    r"|\s[(（](?=[^()（）]*[^\W\d_]{3})",
    re.IGNORECASE,
)
# A second answer offered after the first one's clause: the sentence is then kept whole (a hedge).
_HEDGE_RE = re.compile(
    r"^\s*or\s+(?:maybe\s+|possibly\s+|perhaps\s+)?(?:\$|\\|\(|-?\d|[A-J]\b)"
    r"|\b(?:could|might|may)\s+(?:also|instead)\b|\balternatively\b",
    re.IGNORECASE,
)
_NEXT_HEDGE_RE = re.compile(r"\s*(?:or|alternatively|it\s+(?:could|might)\s+also\s+be)\b", re.IGNORECASE)
# A next sentence that takes the answer back ("The answer is 3. Actually, wait, it is 4."): a hedge.
_REVISION_RE = re.compile(r"\s*(?:actually|wait|hmm+|oops|no\b|correction|on\s+second\s+thought|sorry)", re.I)
_VERB_BEFORE_RE = re.compile(r"(?:\b(?:is|are|equals|be|was|get|obtain|gives?)|=)\s*:?\s*$", re.IGNORECASE)
# "The number of ways is 12" (a sentence under a "Final Answer" heading): the answer is the predicate.
_PREDICATE_RE = re.compile(
    r"^(?:[A-Za-z]+\s+){1,6}(?:is|are|equals|was|will\s+be|would\s+be)\s+(\S.*)$"
    r"|^(?!\(?[A-J]\)?\s*:)(?:[A-Za-z]+\s+){0,6}[A-Za-z]+\s*:\s*(\S.*)$"  # "Eggs: 42", not "C: 24"
)
# Words between a cue and its answer ("the answer is therefore 42", "is approximately 18").
_FILLER_RE = re.compile(
    r"^(?:(?:therefore|thus|hence|so|then|just|simply|exactly|clearly|indeed|approximately|about|roughly"
    r"|likely|probably|equal\s+to|given\s+by)\b[,:]?\s*|=\s*|[-*•]\s+)+",
    re.IGNORECASE,
)
_BARE_LEAD_RE = re.compile(
    r"^(?:(?:it|this|that|there|which|we|i|you|they|he|she|the\s+(?:value|result|total|sum|number))\s+)?"
    r"(?:(?:also|then|finally|now|just)\s+)?"
    r"(?:is|are|was|were|equals|get|got|gets|obtain|obtained|have|has|find|found)\b\s*:?\s*",
    re.IGNORECASE,
)
_LEAD_WORD_RE = re.compile(r"^(?:so|thus|therefore|hence|then|finally)\b[,:]?\s*", re.IGNORECASE)
_WORDS_RE = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}")
# A last line that is only an answer: an option letter (alone, or with a short value and no words).
_LETTER_LINE_RE = re.compile(
    r"^[*_\s]*(?:(?i:option|choice)\s*)?\(?([A-J])\)?[*_\s]*\.?$|^[*_\s]*\(?([A-J])\)[*_\s]+([^a-zA-Z]{1,30})$"
)
_LETTER_AT_END_RE = re.compile(
    r"\b(?i:is|matches|matching|corresponds\s+to|choose|select|pick|go\s+with)\s+(?i:option|choice)\s*"
    r"[*_\s]*\(?([A-J])\)?[*_\s]*[.!]?$"
    r"|\b(?i:option|choice)\s+[*_]*\(?([A-J])\)?[*_]*\s+is\s+(?i:the\s+)?(?i:correct|right)(?i:\s+answer)?[.!]?$"
)
_BOLD_LINE_RE = re.compile(r"^\*\*([^*\n]{1,40})\*\*\.?$")
_BULLET_RE = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+")
_IS_THE_ANSWER_RE = re.compile(
    r"^(?:(?:so|thus|therefore|hence)\b,?\s*)?(\S.{0,59}?)\s+is\s+(?:the|our|my)\s+"
    r"(?:(?:final|correct|right)\s+)?answer[.!]?$",
    re.IGNORECASE,
)
_BOLD_SPAN_RE = re.compile(r"\*\*([^*\n]{1,40})\*\*")
# A bold value in a last sentence: a number, an amount or a formula, with at most two words after it.
_BOLD_VALUE_RE = re.compile(r"^\s*[-+]?(?:\\?\$|\\\(|\d)[^a-zA-Z]*(?:[a-zA-Z]+[^a-zA-Z]*){0,2}$")
_NUMBER_LINE_RE = re.compile(r"^[-+]?\\?\$?\d[\d,]*(?:\.\d+)?%?$")
# A base model that goes on writing the next few-shot question after its answer.
_NEXT_QUESTION_RE = re.compile(r"\n\s*(?:Question|Problem|Q)\s*\d*\s*[:.]\s", re.IGNORECASE)
_MAX_FOLLOW_ONS = 4
_BARE_MAX_CHARS = 160
_CUE_MAX_CHARS = 400


@dataclass(frozen=True)
class Extraction:
    """What was found: one or more answer strings (several only for boxes) and the rule that found them."""

    answers: tuple[str, ...]
    rule: str


@dataclass(frozen=True)
class NoAnswer:
    """Why nothing was found; the response then scores as incorrect."""

    reason: str


# A number grouped in thousands followed by its unit words ("1,248 pages", "2 500 bricks").
_GROUPED_THEN_WORDS_RE = re.compile(
    r"^[-+]?\d{1,3}(?:[, \u00a0\u202f\u2009]\d{3})+(?:\.\d+)?(?:\s+[^\W\d_]+){1,3}$"
)


def _clause(line: str) -> str | None:
    """The answer written as words: up to the end of its clause, or the predicate of a sentence."""
    head, *tail = _CLAUSE_END_RE.split(line, maxsplit=1)
    rest_of_sentence, *next_sentences = re.split(r"\.\s+|\n", tail[0], maxsplit=1) if tail else [""]
    next_sentence = next_sentences[0] if next_sentences else ""
    revised = any(
        _REVISION_RE.match(part) and re.search(r"\d", part) for part in (rest_of_sentence, next_sentence)
    )
    if line[len(head) :].lstrip().startswith(("(", "（")):  # "2 (but probably 3)": a remark offering a value
        revised = revised or offers_value(re.split(r"[)）]", rest_of_sentence, maxsplit=1)[0], head)
    if _HEDGE_RE.search(rest_of_sentence) or _NEXT_HEDGE_RE.match(next_sentence) or revised:
        head = line  # "2, but it could also be 3", "2 (or maybe 3)", "2. Or maybe 3.": kept whole, a hedge
    clause = _FILLER_RE.sub("", head.strip().removesuffix(".").rstrip())
    clause = SPEAKER_LEAD_RE.sub("", clause)  # "Answer: I think 3" -> "3"
    if judged_letter(clause):
        return clause  # "ANSWER: B is the correct choice": the letter is the answer, not "correct"
    if predicate := _PREDICATE_RE.match(clause):
        clause = (predicate.group(1) or predicate.group(2)).strip()
    if " " in clause.strip() and (spelled := spelled_value(clause)) is not None:
        return str(spelled)  # "one hundred and twenty" is one number, not a list of 100 and 20
    if _GROUPED_THEN_WORDS_RE.match(clause):
        clause = GROUP_SEPARATOR_RE.sub("", clause)  # "1,248 pages" is 1248 pages, not the list 1, 248
    return clause or None


_OR_AFTER_NUMBER_RE = re.compile(r"\d\s+or\s+[^\W\d_]", re.IGNORECASE)


def _one_number(clause: str) -> str | None:
    """The number of an answer written as a sentence ("Jane started growing Sphere 3 hours ago"): only
    when the sentence holds exactly one number, in digits or in words, and names no bound ("not 3", "at
    least 3"): "twelve apples in 13 days" states two (issue 44)."""
    if len(_WORDS_RE.findall(clause)) < 3 or BOUND_WORDS_RE.search(clause) or number_words(clause):
        return None
    if _OR_AFTER_NUMBER_RE.search(clause):  # "1000 or więcej" (a localised "or more"), "3 or so": a bound
        return None
    numbers = set(NUMBER_TOKEN_RE.findall(clause))
    return numbers.pop() if len(numbers) == 1 else None


def _predicate_after_math(line: str, segments: list[re.Match[str]]) -> str | None:
    """ "The largest $n$ is 34.": the formulas are the sentence's subject, the value is its predicate."""
    end_of_sentence = re.search(r"(?<=[^\d\s])\.(?:\s|$)|\.\s|\n", line)
    stop = end_of_sentence.start() if end_of_sentence else len(line)
    inside = [segment for segment in segments if segment.end() <= stop]
    if not inside:
        return None
    tail = line[inside[-1].end() : stop]
    verb = re.match(r"\s*(?:is|are|equals|was|will\s+be|would\s+be|=)\s+(?=\S)", tail, re.IGNORECASE)
    if verb is None or not re.search(r"\d", tail[verb.end() :]):
        return None
    return _clause(tail[verb.end() :])


_SENTENCE_END_RE = re.compile(r"(?<=[^\d\s])\.(?:\s|$)|\.\s|\n")


def _answer_after_cue(snippet: str) -> str | None:
    """The answer written right after a cue: its math, or the words up to the end of the clause."""
    snippet = unbold(snippet.lstrip(" \t:*=\n"))
    snippet = re.sub(r"^####\s*", "", snippet)  # "Final answer: #### 4" (GSM8K's marker after a cue)
    if BOX_RE.search(snippet):
        return None  # a box that never closed: the response was cut off inside its answer
    line = snippet.split("\n\n", 1)[0].strip()
    if not line:
        return None
    bullets = line.split("\n")
    if len(bullets) > 1 and all(_BULLET_RE.match(b) for b in bullets):  # "- $x = 2$\n- $y = 3$"
        line = ", ".join(_BULLET_RE.sub("", b).strip().rstrip(".,;") for b in bullets)
    line = line[:_CUE_MAX_CHARS]
    # an answer after its cue that opens by rejecting a value states the value after the rejection ("The
    # answer is not 52, it is 53.", "The answer isn't 52; it's 53."); nothing after it, none
    if (rest := after_rejection(line)) is not None:
        line = rest
    # "The answer is 12, not 13.", "12 apples and not 13": the value stated before a rejection that ends
    # its sentence (a list of 12 and "not 13" before)
    end = _SENTENCE_END_RE.search(line)
    head = line[: end.start()] if end else line
    if (kept := without_trailing_word_rejection(without_trailing_rejection(head))) != head:
        line = kept + line[len(head) :]
    segments = math_segments(line)
    if not segments:
        clause = _clause(line)
        return _one_number(clause) or clause if clause else None
    if predicate := _predicate_after_math(line, segments):
        return predicate
    between = [line[a.end() : b.start()] for a, b in itertools.pairwise(segments)]
    before = line[: segments[0].start()]
    if all(is_connector(gap) for gap in between) and len(before.split()) <= 3:
        if len(segments) == 1:
            return segment_text(segments[0])
        return in_english(line[segments[0].start() : segments[-1].end()])
    # "The probability of $A$ is $\\frac{1}{2}$": the formula after the verb, else the first one.
    starts = [0, *(segment.end() for segment in segments[:-1])]
    for start, segment in zip(starts, segments, strict=True):
        if _VERB_BEFORE_RE.search(line[start : segment.start()]):
            return segment_text(segment)
    return segment_text(segments[0])


def _cue_answer(region: str) -> Extraction | NoAnswer | None:
    """The answer after the last cue that has one ("The answer is ...", "Answer:", "#### 42")."""
    cues: list[tuple[int, str, Language | None]] = sorted(
        itertools.chain(
            ((m.end(), "answer-cue", None) for m in _CUE_RE.finditer(region)),
            ((m.end(), "correction-cue", None) for m in _CORRECTION_CUE_RE.finditer(region)),
            ((m.end(), "hash-cue", None) for m in _HASH_RE.finditer(region)),
            ((m.end(), f"answer-cue:{m.lastgroup}", language_of(m)) for m in find_cues(region)),
        ),
        key=lambda cue: cue[0],
    )
    for end, rule, language in reversed(cues):
        if language is not None:  # "答案是 42。", "Die Antwort ist 42, weil ...", "Ответ: 42"
            # "Die Antwort ist nicht 52, sondern 53.", "Ответ: 53, а не 52": the value not rejected
            snippet = region[end:]
            snippet = after_rejection(snippet.lstrip(" \t:：*=—–-")) or snippet
            answer = _answer_after_cue(without_trailing_rejection(localised_answer(snippet, language)))
        else:
            answer = _answer_after_cue(region[end:])
        if answer and _taken_back(answer, region[end:]):
            return NoAnswer("the answer after the cue is taken back later (a hedge)")
        if answer and doubted_after_cue(_first_clause(region[end:])):
            return NoAnswer("the value after the cue is guessed or bounded (a hedge)")
        if answer:
            return Extraction((answer,), rule)
    return None


def _first_clause(after_cue: str) -> str:
    """The text after a cue up to the end of its sentence (or paragraph)."""
    line = after_cue.lstrip(" \t:：*=—–-").split("\n\n", 1)[0][:_CUE_MAX_CHARS]
    end = _SENTENCE_END_RE.search(line)
    return line[: end.start()] if end else line


def _taken_back(answer: str, after_cue: str) -> bool:
    """ "The answer is 42.\n\nWait, the question asks for the remainder, which is 2.": a later paragraph
    that opens with a revision and ends on another number takes the cued answer back."""
    for paragraph in paragraphs_of(after_cue)[1:]:
        numbers = NUMBER_TOKEN_RE.findall(paragraph)
        said = re.sub(r"[^\d.,/%-]", "", answer).strip(".,")
        if _REVISION_RE.match(paragraph) and numbers and numbers[-1].rstrip(".,") != said:
            return True
    return False


def _named_answer(region: str) -> Extraction | None:
    """A last sentence that names its subject the answer: "So 42 is the answer.", "(C) is correct"."""
    lines = region.strip().rsplit("\n", 1)
    last_sentence = unbold(re.split(r"(?<=[.!?])\s+", lines[-1])[-1])
    if match := _IS_THE_ANSWER_RE.match(last_sentence):
        return Extraction((match.group(1).strip(),), "answer-cue")
    return None


def _last_line_answer(region: str) -> str | None:
    """A last paragraph of one line that is only an answer (see rule 4 of the module docstring)."""
    paragraphs = paragraphs_of(region)
    if not paragraphs:
        return None
    if match := _LETTER_AT_END_RE.search(paragraphs[-1].rsplit("\n", 1)[-1]):
        return f"({match.group(1) or match.group(2)})"  # "... matching option **(B)**."
    bold = _BOLD_SPAN_RE.findall(paragraphs[-1].rsplit("\n", 1)[-1])
    if len(bold) == 1 and _BOLD_VALUE_RE.match(bold[0]) and looks_complete(region):
        return bold[0].strip()  # "Janet makes **$18** every day." (GPT-4-style bold answer)
    if labelled := labelled_line(paragraphs[-1].split("\n")):
        return labelled  # "Final: 52" closing a long reply
    if len(paragraphs) < 2 or "\n" in paragraphs[-1]:
        return None
    line = paragraphs[-1]
    if match := _LETTER_LINE_RE.match(line):
        letter = match.group(1) or match.group(2)
        return f"({letter}) {match.group(3).strip()}" if match.group(3) else f"({letter})"
    if (match := _BOLD_LINE_RE.match(line)) and len(_WORDS_RE.findall(match.group(1))) <= 1:
        return match.group(1).strip()
    if _NUMBER_LINE_RE.match(line):
        return line
    spoken = speaker_lead().sub("", SPEAKER_LEAD_RE.sub("", line), count=1).rstrip(".!。")
    if spoken != line and _NUMBER_LINE_RE.match(spoken):
        return spoken  # "I say: 48", "Ich denke: 48"
    return None


def _last_paragraph_math(region: str) -> str | None:
    """The last formula of a final paragraph that concludes, or that is only a formula."""
    paragraphs = paragraphs_of(region)
    if not paragraphs or not looks_complete(region):
        return None
    last = paragraphs[-1]
    segments = math_segments(last)
    if not segments:
        return None
    outside = MATH_SEGMENT_RE.sub(" ", last)
    only_math = not _WORDS_RE.search(outside) and not CJK_RE.search(outside)
    if not only_math and not _CONCLUDING_RE.search(last):
        return None
    if other_values_after(last, segments[-1]):
        return None
    first = len(segments) - 1
    while first > 0 and is_connector(last[segments[first - 1].end() : segments[first].start()]):
        first -= 1
    if first < len(segments) - 1:  # "The solutions are $x = 2$ and $x = 3$."
        return in_english(last[segments[first].start() : segments[-1].end()])
    answer = segment_text(segments[-1])
    # "... so $a + b = 12$": the value is what follows the last top-level "=".
    value = answer.rsplit("=", 1)[-1].strip()
    lone_variable = re.fullmatch(r"[a-zA-Z](?:_\{?\w+\}?)?", value)  # "-8x + 7 = y" is an equation
    if "=" in answer and not lone_variable and not re.search(r"\\(?:leq?|geq?|ne(?:q)?)|[<>!≠]", answer):
        answer = value
    return answer or None


# A one-line answer whose words only label or measure its one formula: "$28$ percent", "Matrix: $M$".
_FORMULA_THEN_UNIT_RE = re.compile(
    r"^\$[^$]+\$\s*[a-zA-Z%]+(?:\s+[a-zA-Z]+)?\.?$|^[A-Za-z][A-Za-z ]{0,30}:\s*\$[^$]+\$\.?$"
)
# Boilerplate after a final answer (Minerva's "I hope it is correct.").
_SIGN_OFF_RE = re.compile(r"\s*(?:I\s+hope\s+(?:it|this)\s+is\s+correct|Hope\s+this\s+helps)[.!]?\s*$", re.I)


def _is_bare(region: str) -> bool:
    """A short region of few words; words around a formula ("So the probability is $p$.") or a bold
    value are not part of the answer, so such a region is left to the rules that read those."""
    stripped = region.strip()
    if not stripped or len(stripped) > _BARE_MAX_CHARS or stripped.count("\n") > 1:
        return False
    if len(CJK_RE.findall(MATH_SEGMENT_RE.sub(" ", stripped))) > CJK_MAX_BARE:
        return False  # "两边同时除以 2，得出 $x = 1.5$。": a sentence, read by the rules for sentences
    if math_segments(stripped) and _WORDS_RE.search(MATH_SEGMENT_RE.sub(" ", stripped)):
        return bool(_FORMULA_THEN_UNIT_RE.match(stripped))  # "$28$ percent", "$5$ cm"
    if _BOLD_SPAN_RE.search(stripped) and _WORDS_RE.search(_BOLD_SPAN_RE.sub(" ", stripped)):
        return False  # "Total: **55 marbles**.": the bold value is the answer (rule 4)
    return len(_WORDS_RE.findall(stripped)) <= 4


def _bare_value(region: str) -> str:
    """A short answer without its lead-in: "So we get x = 3" -> "x = 3", "It is 3." -> "3", "= 3" -> "3"
    (read whole, "It is 3" is the product I*t*i*s*3)."""
    text = _LEAD_WORD_RE.sub("", region.strip())
    text = SPEAKER_LEAD_RE.sub("", text)
    text = _BARE_LEAD_RE.sub("", text)
    # "Matrix: $M$" -> "$M$", "Total: 42" -> "42" (a label of one letter is an option: "C: 24"; a label
    # that judges or bounds the value, "Wrong: 42", "At least: 42", is kept and the answer stays unread)
    if (labelled := labelled_line([text])) is not None:
        return labelled  # "Final: x = 1,248" -> "x = 1248", "Final: twelve" -> "12", as closing a long reply
    label = re.match(r"^[A-Za-z][A-Za-z ]{0,30}:\s*(?=\$)", text) or answer_label(text)
    if label:
        if doubted_label_value(text[label.end() :]):
            return region.strip()  # "Total: 42 at least", "Final: 52 maybe": no answer is read
        text = text[label.end() :]
    text = re.sub(r"^####\s*(?=[-+$\\\d.(])", "", text)  # "The result is #### 4": GSM8K's marker
    return text.lstrip("= ").strip() or region.strip()


def _answer_region(response: str, max_chars: int) -> tuple[str, bool]:
    """The final region (see `final_region`), without chat tokens or a next few-shot question."""
    text = response[-max_chars:] if len(response) > max_chars else response
    region, unclosed = final_region(strip_turn_tokens(text))
    markers = [m.end() for pattern in (BOX_RE, _CUE_RE, _HASH_RE) if (m := pattern.search(region))]
    markers += [m.end() for m in find_cues(region)[:1]]
    if not markers:
        return region, unclosed
    # Only a few follow-on questions are tried, each a linear scan, so a hostile response stays cheap.
    follow_ons = itertools.islice(_NEXT_QUESTION_RE.finditer(region, min(markers)), _MAX_FOLLOW_ONS)
    for follow_on in follow_ons:
        head = region[: follow_on.start()]
        if find_boxes(head) or isinstance(_cue_answer(head), Extraction):  # answered before it
            return head, unclosed
    return region, unclosed


_FINAL_CUE_RE = re.compile(r"\bfinal\s+answer\b(?:\s*:)?(?:\s*the\s+final\s+answer\s+is)?", re.IGNORECASE)


# An explicit correction that restates the answer: "Correcting, the answer is 44.", "Correction: 44".
_CORRECTION_CUE_RE = re.compile(
    r"\b(?:correcting|correction|corrected|to\s+correct)\b[^.\n]{0,40}?"
    r"(?:the\s+(?:(?:correct|final|right)\s+)?answer\s+(?:is|should\s+be)|it\s+(?:is|should\s+be)|:)",
    re.IGNORECASE,
)


def _final_cue_after_boxes(region: str) -> Extraction | None:
    """ "... = \\boxed{255} ... Final Answer: The final answer is $10,455$.": boxes of intermediate
    values, then the response's own final answer after the last of them; or a box the response then
    corrects explicitly ("\\boxed{42} ... Correcting, the answer is 44.": the corrected answer counts)."""
    last_box = max(m.start() for m in BOX_RE.finditer(region))
    for pattern, rule in ((_CORRECTION_CUE_RE, "correction-cue"), (_FINAL_CUE_RE, "final-answer-cue")):
        cue = None
        for match in pattern.finditer(region, last_box):
            cue = match
        if cue is None:
            continue
        answer = _answer_after_cue(region[cue.end() :])
        if answer and re.search(r"[\d\\]", answer):  # not "Final Answer: see the box above"
            return Extraction((answer,), rule)
    return None


# The answer slot of R1-style formats ("<think>...</think><answer>42</answer>").
_ANSWER_TAG_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


def tagged_answers(response: str) -> list[str]:
    """The different non-empty texts of a response's `<answer>` tags, as written (a task whose answers
    are grids or sentences reads them whole)."""
    return list(dict.fromkeys(c.strip() for c in _ANSWER_TAG_RE.findall(response) if c.strip()))


def _answer_tags(region: str, max_chars: int) -> Extraction | None:
    """The answer an `<answer>` tag holds, read by the same rules inside it (a box, a cue, a bare value);
    tags with different contents are all returned, so the comparer sees the hedge (rule `answer-tag`)."""
    contents = tagged_answers(region)
    if len(contents) > 1:
        return Extraction(tuple(contents), "answer-tag")
    if not contents or "<answer>" in contents[0].lower():
        return None
    inner = extract(contents[0], max_chars)
    return Extraction(inner.answers, f"answer-tag:{inner.rule}") if isinstance(inner, Extraction) else None


def opens_with_cue(text: str) -> bool:
    """Whether a one-line text opens with an answer cue ("The answer is 33", "Answer: 12", "答案：12"):
    a reference written that way states its answer after the cue (HELM's tests write golds so)."""
    stripped = text.strip()
    if "\n" in stripped or len(stripped) > _CUE_MAX_CHARS:
        return False
    cue = _CUE_RE.match(stripped) or next((m for m in find_cues(stripped) if m.start() == 0), None)
    return cue is not None


def extract(response: str, max_chars: int) -> Extraction | NoAnswer:
    """Find the final answer of `response` (see the module docstring for the rules and their order)."""
    region, unclosed = _answer_region(response, max_chars)
    if not region.strip():
        return NoAnswer("nothing after </think>")
    boxes = find_boxes(region)
    if boxes and (final := _final_cue_after_boxes(region)):
        return final
    if boxes:
        return Extraction(tuple(boxes), "boxed")
    if unclosed:
        return NoAnswer("the thinking never closed (cut off) and nothing is boxed")
    if "<answer>" in region and (tagged := _answer_tags(region, max_chars)):
        return tagged
    cued = _cue_answer(region)
    if isinstance(cued, NoAnswer):
        return cued
    if cued := cued or _named_answer(region):
        return cued
    region = without_checks(_SIGN_OFF_RE.sub("", region))
    # A one-line reply that ends on its value without a full stop was not cut off: its sentence is read.
    closed = region.rstrip() + "." if not looks_complete(region) and ends_short_on_value(response) else region
    if _is_bare(region):
        # "She still has 13 apples." is a short statement of a result; "So x = 3." is an answer.
        prose = len(_WORDS_RE.findall(MATH_SEGMENT_RE.sub(" ", region))) >= 2
        if prose and (number := concluding_number(closed)):
            return Extraction((number,), "concluding-sentence")
        bare = _bare_value(region)
        if read_letters(bare) is None and (letters := choosing_sentence(region)):
            return Extraction((letters,), "choice-prose")  # "The correct one is (C).", "Not A: I pick C."
        return Extraction((bare,), "bare")
    for rule, find in (  # a last sentence that states one number outranks a formula before it
        ("last-line", _last_line_answer),
        ("concluding-sentence", lambda _: concluding_number(closed)),
        ("last-math", _last_paragraph_math),
    ):
        if answer := find(region):
            return Extraction((answer,), rule)
    if letters := choosing_sentence(region):
        return Extraction((letters,), "choice-prose")
    if word := word_predicate(region):
        return Extraction((word,), "predicate-sentence")
    if not looks_complete(region):
        return NoAnswer("the response stops mid-sentence (cut off) without a final answer")
    return NoAnswer("no boxed answer, answer cue or concluding formula found")
