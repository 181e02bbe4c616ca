"""What an item's prompt (`Item.prompt`, optional) settles that the answer alone cannot.

- Whether the question asks for a percent: then "4%" answers a gold "4" (the gold is the number of
  percent); without such a question "4%" is 0.04 and never equals a gold 4 (issue 28: rewarded before).
- Whether a response only restates the question (issue 28): a policy that copies the question and ends
  on a number from it is rewarded whenever the gold happens to appear in the question. Read as a
  restatement, and not rewarded (rule `restates-prompt`), is a response whose final answer is a number
  the prompt holds, that writes no number the prompt does not hold, and whose words are nearly all
  copied from the prompt (runs of three or more words of it), leaving at most a few words of its own
  besides answer phrasing ("so the answer is"). Any working (a number of its own, a sentence of its own)
  makes it an answer like any other, so an honest response whose answer happens to be in the question
  is never caught; a paraphrase of the question is not detected (that would need a model).
- Whether "1,22" is one number: yes when the question writes its decimals with a comma ("2,5 kg") or
  the answer is cued in a language that does ("Die Antwort ist 3,5."); otherwise a list (the sound
  reading: a list never answers a single-valued gold), and `details["decimal_comma"]` says which.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

from assay.verifiers.math.cues import DIGITS_RE, LANGUAGES
from assay.verifiers.math.spelled import spelled_numbers, with_digits

# "What percent ...", "the percentage of", "in %", "(%)", "Prozent", "pourcentage": a percent asked for,
# not a percent given ("a 20% discount", "20 percent of them").
_ASKS_PERCENT_RE = re.compile(
    r"\b(?P<word>percent(?:age)?|per\s+cent|prozent(?:satz)?|pourcentage|porcentaje|percentuale"
    r"|percentagem|procent|процент\w*)\b|(?:\bin|\bas\s+an?|\()\s*%|百分比|百分之几|パーセント|퍼센트",
    re.IGNORECASE,
)
_WORD_RE = re.compile(r"[^\W_]+")
_SHINGLE = 3  # a copied run is at least three words long
_MAX_OWN_WORDS = 4
_MIN_COPIED_SHARE = 0.7
_MIN_WORDS = 6
_ANSWER_WORDS = frozenset(
    {"so", "thus", "therefore", "hence", "the", "answer", "final", "is", "boxed", "result", "total", "then"}
    | {"we", "get", "it", "a", "an", "of", "that", "this", "equals", "text", "frac", "in", "all", "are"}
)


def asks_for_percent(prompt: str | None) -> bool:
    """Whether the question asks for its answer as a percent (a percent word not right after a number)."""
    if not prompt:
        return False
    for match in _ASKS_PERCENT_RE.finditer(prompt):
        if not match.group("word") or not re.search(r"\d\s*$", prompt[: match.start()]):
            return True
    return False


@cache
def _cue_words() -> frozenset[str]:
    """Words of every answer cue of the multilingual table: answer phrasing, not working."""
    words = set()
    for language in LANGUAGES:
        for phrase in (*language.copulas, *language.nouns, *language.trailers):
            words.update(_WORD_RE.findall(phrase.lower()))
    return frozenset(words)


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in DIGITS_RE.findall(text)}


def _stated_numbers(sentence: str) -> set[str]:
    """The numbers a closing sentence states as the extractor reads them, number words too ("Tom has
    twelve apples." states 12)."""
    return _numbers(with_digits(sentence) or sentence)


@lru_cache(maxsize=256)
def _prompt_numbers(prompt: str) -> frozenset[str]:
    """The prompt's numbers, in digits or in words of any table language (a closing sentence that
    repeats "Tom has twelve apples." from the prompt restates 12)."""
    return frozenset(_numbers(prompt) | {str(n) for n in spelled_numbers(prompt)})


def restates_prompt(prompt: str | None, response: str, answer: str) -> bool:
    """Whether `response` only restates `prompt` and ends on `answer`, a number the prompt holds."""
    if not prompt:
        return False
    answer_numbers = _numbers(answer)
    prompt_numbers = _numbers(prompt)
    if len(answer_numbers) != 1 or not answer_numbers <= prompt_numbers:
        return False
    if not _numbers(response) <= prompt_numbers:
        return False  # a number of its own: working
    words = _WORD_RE.findall(re.sub(r"\\[a-zA-Z]+", " ", response.lower()))
    if len(words) < _MIN_WORDS:
        return False  # a bare answer restates nothing
    prompt_words = _WORD_RE.findall(prompt.lower())
    shingles = {tuple(prompt_words[i : i + _SHINGLE]) for i in range(len(prompt_words) - _SHINGLE + 1)}
    copied = [False] * len(words)
    for i in range(len(words) - _SHINGLE + 1):
        if tuple(words[i : i + _SHINGLE]) in shingles:
            copied[i : i + _SHINGLE] = [True] * _SHINGLE
    if sum(copied) < _MIN_COPIED_SHARE * len(words):
        return False
    own = [
        w
        for w, was_copied in zip(words, copied, strict=True)
        if not was_copied and w not in _ANSWER_WORDS and w not in _cue_words() and w not in prompt_numbers
    ]
    return len(own) <= _MAX_OWN_WORDS


# "1,22", "0,5": a comma that may be a decimal comma or a list separator (no space, one or two digits).
_AMBIGUOUS_COMMA_RE = re.compile(r"(?<![\d,.])(\d{1,3}),(\d{1,2})(?![\d,])")
_PROMPT_DECIMAL_COMMA_RE = re.compile(r"(?<![\d,.])\d+,\d{1,2}(?![\d,])")


def has_ambiguous_comma(text: str) -> bool:
    """Whether `text` holds an ambiguous comma outside brackets (in "(1,2)" a comma only separates)."""
    return not re.search(r"[(\[{]", text) and bool(_AMBIGUOUS_COMMA_RE.search(text))


def decimal_comma(prompt: str | None, extraction: str) -> str | None:
    """Why an ambiguous "1,22" is one number here (the reason goes to `details`), or None: the answer was
    cued in a language that writes decimal commas ("Die Antwort ist 3,5."), or the prompt itself writes
    decimals with a comma and none with a point. Otherwise "1,22" stays a list: the sound reading, since
    a list never answers a single-valued gold."""
    code = extraction.removeprefix("answer-cue:") if extraction.startswith("answer-cue:") else ""
    language = next((language for language in LANGUAGES if language.code == code), None)
    if language is not None and language.decimal_comma:
        return f"decimal comma: the answer is cued in {language.name}, which writes 3,5 for 3.5"
    if prompt and _PROMPT_DECIMAL_COMMA_RE.search(prompt) and not re.search(r"\d\.\d", prompt):
        return "decimal comma: the prompt writes its decimals with a comma"
    return None


def with_decimal_points(text: str) -> str:
    """ "1,22" -> "1.22" (only the ambiguous commas; "1,000" and "1,2,3" are left alone)."""
    return text if re.search(r"[(\[{]", text) else _AMBIGUOUS_COMMA_RE.sub(r"\1.\2", text)


# A token: one CJK character (those scripts put no spaces between words), or a run of letters / digits.
_CJK = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af"
_TOKEN_RE = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
# A sentence or a clause of the prompt: "A square has side length 4 cm, and a circle has radius 2 cm."
_PROMPT_CLAUSE_RE = re.compile(
    r"[.!?;:,](?=\s|$)|[。！？；：，、\n]|\s(?:and|but|then|while)\s", re.IGNORECASE
)
# Where a sentence (or a lead-in such as "Recall:") ends: a mark before a space, a CJK mark, a line end.
_BOUNDARY_RE = re.compile(r"[.!?:](?=\s)|[。！？：\n]")
_MAX_OWN_TOKENS = 2
_MAX_REMARKS = 2  # closing remarks with no number after the restated sentence ("Hope this helps!")
_MIN_PROMPT_SENTENCE_SHARE = 0.8


def _tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(re.sub(r"\\[a-zA-Z]+", " ", text.lower()))


def _copies_a_prompt_sentence(sentence: str, prompt: str) -> bool:
    """Whether `sentence` is (essentially) one sentence of `prompt`: runs of three or more of its tokens
    come from the prompt and cover most of one prompt sentence, leaving at most two tokens of its own
    besides answer phrasing ("So, ...", "Recall: ...")."""
    tokens = _tokens(sentence)
    shingles, clauses = _prompt_index(prompt)
    copied = [False] * len(tokens)
    for i in range(len(tokens) - _SHINGLE + 1):
        if tuple(tokens[i : i + _SHINGLE]) in shingles:
            copied[i : i + _SHINGLE] = [True] * _SHINGLE
    own = [
        t for t, was in zip(tokens, copied, strict=True) if not was and t not in _ANSWER_WORDS | _cue_words()
    ]
    if len(own) > _MAX_OWN_TOKENS or sum(copied) < _SHINGLE:
        return False
    said = {t for t, was in zip(tokens, copied, strict=True) if was}
    return any(len(words & said) >= _MIN_PROMPT_SENTENCE_SHARE * len(words) for words in clauses)


@lru_cache(maxsize=256)
def _prompt_index(prompt: str) -> tuple[frozenset[tuple[str, ...]], tuple[frozenset[str], ...]]:
    """The prompt's runs of three tokens and the token sets of its clauses, built once per prompt (the G
    responses of a group share one)."""
    tokens = _tokens(prompt)
    shingles = frozenset(tuple(tokens[i : i + _SHINGLE]) for i in range(len(tokens) - _SHINGLE + 1))
    clauses = (frozenset(_tokens(clause)) for clause in _PROMPT_CLAUSE_RE.split(prompt))
    return shingles, tuple(words for words in clauses if len(words) >= _SHINGLE)


def restated_ending(prompt: str | None, response: str) -> str | None:
    """The response without its closing sentence when that sentence only repeats a sentence of the prompt
    and the prompt's numbers (issue 44: "A square has side length 4." closing a response to "A square has
    side length 4. What is its area?" was read as the answer 4): the answer must be the response's own
    claim, so it is looked for in what comes before (closing remarks with no number after the sentence,
    such as "Hope this helps!", go with it). None when the closing sentence is the response's own (it
    holds a number or words of its own)."""
    if not prompt:
        return None
    text = response.rstrip()
    start = max(len(text) - 600, 0)
    begins = [start, *(m.end() for m in _BOUNDARY_RE.finditer(text, start, len(text) - 1))]
    cut = len(text)
    for skipped, begin in enumerate(reversed(begins)):
        sentence = text[begin:cut]
        if _stated_numbers(sentence):
            break
        if skipped >= _MAX_REMARKS:
            return None
        cut = begin
    else:
        return None
    numbers = _stated_numbers(sentence)
    if not numbers <= _prompt_numbers(prompt) or not _copies_a_prompt_sentence(sentence, prompt):
        return None
    return text[:begin]
