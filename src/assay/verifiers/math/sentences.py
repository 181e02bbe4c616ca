"""Reading the last sentences of a response: where one ends, whether the response was cut off, what a
concluding sentence states (extract.py's rules 5 and 6 and the sentence rules of issue 30), and which
words only join two formulas. Split from extract.py, which applies these in its order of preference.
"""

from __future__ import annotations

import itertools
import re
from functools import cache

from assay.verifiers.math.cue_extras import CONTRASTING, NOR_WORDS, REJECTING
from assay.verifiers.math.cues import LANGUAGES, and_words, hedge_or_negation
from assay.verifiers.math.formulas import math_segments, unbold
from assay.verifiers.math.spelled import language_of, spelled_numbers, spelled_value, with_digits

# Words that may sit between the math segments of one answer ("either $2$ or $3$", "$x=1$ and $x=2$").
CONNECTOR_RE = re.compile(
    r"^[\s,;.:]*(?:either|or|and|both|maybe|perhaps|possibly|alternatively|even|&|,|;|\s)*[\s,;.:]*$",
    re.IGNORECASE,
)
# CJK script: its sentences need no spaces, so [a-zA-Z] word counts miss them.
CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
CJK_MAX_BARE = 4  # "42个苹果" is a bare answer with its unit; a CJK sentence is not
_CONCLUSION_START_RE = re.compile(
    r"^(?:so(?!\s+far\b)|thus|therefore|hence|in\s+total|in\s+all|altogether|overall|in\s+conclusion"
    r"|consequently)\b",
    re.IGNORECASE,
)
# Openers of a sentence that is a step, a plan or a supposition rather than the result.
_NOT_FINAL_START_RE = re.compile(
    r"^(?:so\s+far|first(?:ly)?|second(?:ly)?|next|now|then|let(?:'s)?|to|if|suppose|assume|since|because|note|"
    r"recall|consider|step|initially|before|after|when|while|(?:we|i)\s+(?:need|have)\s+to\s+"
    r"(?:find|compute|calculate|determine|add|subtract|multiply|divide|figure|solve|check|work|consider|know"
    r"|count|convert|set|apply|plug|substitute|simplify|evaluate|look|take|account|remember|make\s+sure)\b"
    r"|we\s+(?:must|can|will|should)|i\s+(?:will|think|am|'m)|(?:this|that)(?!['’]s\b|\s+(?:makes|gives|leaves|means|comes\s+to"
    r"|adds\s+up\s+to|totals?|is(?!\s*,)|was)\b)|here|wait|hmm|but|and|or|check|verify|plug"
    # "Also, ..." adds a step; German "Also ist die Fläche 16." concludes (its verb comes second)
    r"|also(?!\s+(?:ist|sind|beträgt|betragen|hat|haben|braucht|brauchen|bekommt|bekommen|kostet|kosten|gibt"
    r"|ergibt|macht|wird|werden|muss|müssen|erhalten|erhält)\b))\b",
    re.IGNORECASE,
)
_STATEMENT_MAX_WORDS = 25
_VALUE_FIRST_RE = re.compile(r"^[-+]?\\?\$?\d")
# A short answer's opening words that say who answers or how sure they are ("I think it is 48.", "I'd
# say: 3.", "A total of 48."): read as letters, these made 48 a choice "I" (issue 30); before a value they
# are no step (issue 44: "I think it's 48 apples." closes a response with its answer).
SPEAKER_LEAD_RE = re.compile(
    r"^(?:(?:i|we)(?:\s+|['’]d\s+)(?:(?:really|would|also)\s+)?"
    r"(?:think|guess|believe|reckon|suppose|say|get|got|found|find|obtain(?:ed)?|calculated|computed|make\s+it"
    r"|conclude|answer|go\s+with|pick|choose)"
    r"(?:\s*[:：]\s*|\s+)(?:that\s+)?(?:(?:it|this|that|the\s+answer)(?:\s+is|['’]s|\s+would\s+be|\s+should\s+be)\s+)?"
    r"|(?:a|the)\s+total\s+of\s+|in\s+total,?\s+|(?:it|that|this)['’]s\s+|that\s+makes\s+"
    r"|(?:the\s+)?answer['’]s\s+)",
    re.IGNORECASE,
)
BOUND_WORDS_RE = re.compile(
    r"\b(?:(?:less|more|greater|fewer|smaller|larger|other)\s+than|at\s+(?:least|most)|not|never|except"
    r"|wrong|incorrect|mistaken?|(?:an?|my|the)\s+error\b(?!\s+in)|so\s+far|partial)\b"
    r"|(?<=[a-z])n['’]t\b",  # "hasn't", "isn't": inside its word, where a \b before the n never holds
    re.IGNORECASE,
)
_TIME_TOKEN_RE = re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?\s?m\b\.?)?(?![\d:])", re.I)
# A percent sign may be LaTeX-escaped (`12\%`): it belongs to the number (issue 28: gold 4 vs "4\%").
NUMBER_TOKEN_RE = re.compile(
    r"(?<![\w.^_{}\\])-?(?:\d{1,3}(?:,\d{3})+|\d{1,3}(?:[ \u00a0\u202f\u2009]\d{3})+|\d+)"  # 2,500 / 2 500
    r"(?:\.\d+)?(?:[eE][-+]?\d+)?(?:/\d+)?(?:\\?%)?(?![\w^_{]|\.\d)"
)
_LAST_SENTENCE_MAX_CHARS = 300
# A formula written in plain text: a power ("x^2"), a product or quotient of a letter and a number
# ("2*x", "x/4"), a one-letter variable plus a number ("x + 1"). Its numbers are not the sentence's one
# number: "The antiderivative is x^2/2 + C." answered 2, "The result is x^2 + 1." answered 1.
_PLAIN_FORMULA_RE = re.compile(
    r"(?<![A-Za-z])[A-Za-z]\s*(?:\^|\*\*)|\d\s*[*/]\s*[A-Za-z](?![A-Za-z])"
    r"|(?<![A-Za-z])[A-Za-z]\s*[*/+]\s*\d"
)


_AND_WORDS = frozenset({"和", "与", "及", "と", "및"})


@cache
def _or_words() -> frozenset[str]:
    """ "or" of every language of the cue table."""
    return frozenset(w for language in LANGUAGES for w in language.or_words)


def _joining_word(gap: str) -> str | None:
    """ "or" / "and" when the text between two formulas is another language's word for it (CJK scripts
    write "and" with no spaces around it), else None."""
    word = gap.strip(" \t\n,;.:，、；：")
    if word in _AND_WORDS or word.lower() in and_words():
        return "and"
    return "or" if word in _or_words() else None


def is_connector(gap: str) -> bool:
    """Whether the text between two formulas only joins them ("$x=2$ or $x=3$", "$x=5$ 或 $x=6$"): the
    formulas are then one answer (a list, or a hedge the comparer rejects), never the last one alone."""
    return bool(CONNECTOR_RE.match(gap)) or _joining_word(gap) is not None


def in_english(joined: str) -> str:
    """Formulas joined by another language's "or" / "and" ("$x=5$ 或 $x=6$"), with the word in English so
    the comparer reads the list or the hedge ("$x=5$ or $x=6$")."""

    segments = math_segments(joined)
    if len(segments) < 2:
        return joined
    # Only the text between two formulas is a joining word: inside one, "$E$" or "$y$" is math (they
    # are the Italian and the Spanish "and", and read so, "$A$ or $E$" became "$A$ or $ and $": choice A).
    out = [joined[: segments[0].end()]]
    for before, after in itertools.pairwise(segments):
        gap = joined[before.end() : after.start()]
        joining = _joining_word(gap)
        out.append(f" {joining} " if joining else gap)
        out.append(joined[after.start() : after.end()])
    return "".join(out) + joined[segments[-1].end() :]


def looks_complete(text: str) -> bool:
    """A response that was cut off by the token limit usually stops mid-sentence or mid-formula."""
    tail = text.rstrip()
    return (bool(tail) and tail[-1] in ".!)]}$*。！？．」』।") or tail.endswith(("\\]", "\\)"))


_SHORT_REPLY_MAX_CHARS = 500  # 25 words of 20 characters
# A response's last word is its value, with a unit sign or a short unit written against it.
_ENDS_ON_VALUE_RE = re.compile(r"\d(?:[€£¥$%°²³]|[a-zA-Z]{1,3}[²³]?)?$")


def ends_short_on_value(response: str) -> bool:
    """Whether a response that stops without a full stop still ends its answer: one line of at most
    `_STATEMENT_MAX_WORDS` words whose last word is a value ("the number is not 10 which is 1,000.99€").
    A token limit cuts long outputs (budgets are hundreds of tokens), not a one-line reply, and a reply
    that stops on "to" or "and" stays cut off."""
    if len(response) > _SHORT_REPLY_MAX_CHARS:  # a long response is never split into words here
        return False
    text = response.strip()
    return (
        "\n" not in text
        and len(text.split()) <= _STATEMENT_MAX_WORDS
        and bool(_ENDS_ON_VALUE_RE.search(text))
    )


def paragraphs_of(region: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", region.strip()) if p.strip()]


def other_values_after(paragraph: str, segment: re.Match[str]) -> bool:
    """ "The equation is $x=\\frac{1}{4}$. Some other numbers are 1, 2, 3.": a later sentence that offers
    numbers the formula does not hold (and is no check: it has no "=") leaves the answer open (rule
    `values-after-formula`; eval-protocol's tests score such a response 0)."""
    tail = paragraph[segment.end() :]
    sentence = re.search(r"[.!?]\s+(\S[^$]*)$", tail)
    if sentence is None or "=" in sentence.group(1):
        return False
    said = set(NUMBER_TOKEN_RE.findall(segment.group(0)))
    return bool(set(NUMBER_TOKEN_RE.findall(sentence.group(1))) - said)


# A sentence ends at . ! ? or after a displayed formula (`$$...$$`, `\\[...\\]`), before a capital.
SENTENCE_END_RE = re.compile(r"(?:(?<=[.!?])|(?<=\$\$)|(?<=\\\]))\s+(?=[A-Z*])")


# A closing sentence that guesses rather than states ("Maybe it's 7.", "It could be 3."); "could" alone
# is kept: "She could buy 5 pencils." answers "how many could she buy", and "I guess 48." names who
# answers, as "I think 48." does (issue 30).
_HEDGE_WORDS_RE = re.compile(
    r"\b(?:maybe|perhaps|possibly|might|(?:could|may)\s+(?:also\s+)?be|may\s+(?:need|have|get|take)|not\s+sure"
    r"|unsure)\b",
    re.I,
)
_CJK_DIGIT_RE = re.compile(
    r"(?<=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])(?=\d)|(?<=\d)(?=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])"
)
_CJK_SENTENCE_END_RE = re.compile(r"(?<=[。！？])\s*")
# An interval, a point or a set written in a sentence: "[1, 5)", "(-inf, 3]", "(1, 2, 3)", "{2, -3}".
_END_VALUE = r"[-+−]?(?:\d[\d,]*(?:\.\d+)?|∞|\\infty|inf(?:inity)?)"
_BRACKETED_RE = re.compile(
    rf"[\[(]\s*{_END_VALUE}(?:\s*[,;]\s*{_END_VALUE})+\s*[\])]|\{{\s*{_END_VALUE}(?:\s*[,;]\s*{_END_VALUE})+\s*\}}",
    re.IGNORECASE,
)
# One root of several: "x = 2" in "The roots are x = 2 and x = -3."
_ROOT_RE = re.compile(
    r"(?<![\w\\])([a-zA-Z])(?:_\{?\d+\}?|[₀-₉]+)?\s*=\s*(-?\d+(?:\.\d+)?(?:/\d+)?)(?!\w|\.\d)"
)
_VALUE_RE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:/\d+)?(?!\w|\.\d)")
# A plural answer noun before its values: "The roots are 2 and -3.", "Les solutions sont 2 et -3."
_PLURAL_LIST_RE = re.compile(
    r"\b(?:roots|solutions|zeroe?s|values|answers|numbers|integers|nullstellen|lösungen|soluciones|raíces"
    r"|racines)\b[^.!=]{0,40}?\b(?:are|were|sind|sont|son)\s*:?\s*(.+?)\s*[.!]?$",
    re.IGNORECASE,
)


def last_sentence(paragraph: str) -> str:
    """The last sentence of a paragraph (a CJK sentence ends at 。！？ with no space after it)."""
    sentence = SENTENCE_END_RE.split(paragraph)[-1]
    parts = [part for part in _CJK_SENTENCE_END_RE.split(sentence) if part.strip()]
    return parts[-1] if parts else sentence


def _join(values: list[str], gaps: list[str]) -> str | None:
    """Values with only "and" / "or" / commas between them (any language of the cue table) as one answer:
    "2 and -3" -> "2, -3" (a list), "2 or -3" -> "2 or -3" (a list for a list gold, else a hedge)."""
    joined = values[0]
    for gap, value in zip(gaps, values[1:], strict=True):
        word = gap.strip(" \t,;，、；").lower()
        if word and word not in ("and", "or") and word not in and_words() and word not in _or_words():
            return None  # "x = 2 fails, so x = 3": not one answer
        joined += (" or " if word == "or" or word in _or_words() else ", ") + value
    return joined


def _roots(sentence: str) -> str | None:
    """ "The roots are x = 2 and x = -3.": several values of one variable (x, x_1, x₂) joined by "and" /
    "or" / commas are one answer, "x = 2, x = -3", that the comparer reads as a list; None for fewer than
    two or for other words between them."""
    roots = list(_ROOT_RE.finditer(sentence))
    if len(roots) < 2 or len({root.group(1) for root in roots}) > 1:
        return None
    gaps = [sentence[a.end() : b.start()] for a, b in itertools.pairwise(roots)]
    return _join([f"{root.group(1)} = {root.group(2)}" for root in roots], gaps)


def _values(text: str) -> str | None:
    """ "2, -3" or "2 and -3" (only values and joining words, at least two values) as one answer."""
    values = list(_VALUE_RE.finditer(text))
    if len(values) < 2 or text[: values[0].start()].strip() or text[values[-1].end() :].strip(" .!。！"):
        return None
    gaps = [text[a.end() : b.start()] for a, b in itertools.pairwise(values)]
    return _join([v.group(0) for v in values], gaps)


@cache
def _rejected_re() -> re.Pattern[str]:
    """A value the sentence rejects, with the words between the negation and it ("not 10", "isn't 10",
    "not it's not 10", "not equal to 10", "nicht 12", "不是12") and the values an "or" / "nor" / "and" of
    any language joins to it ("not 12 or 13", "nicht 12 oder 13"): in "It is not 12, it is 42." the
    rejection holds no answer, and the value outside it is the one stated."""
    letter = r"[^\W\d_]"
    words = "|".join(re.escape(w) for w in sorted(set(REJECTING) - {"不是"}, key=len, reverse=True))
    joining = "|".join(
        re.escape(w)
        for w in sorted({"or", "and", *NOR_WORDS, *_or_words(), *and_words()}, key=len, reverse=True)
    )
    number = NUMBER_TOKEN_RE.pattern
    # Only words that keep the value the thing rejected may stand between: "not divisible by 7" rejects
    # no value 7 (it says what 91 is), so it stays a negation and the sentence states nothing.
    between = rf"(?:(?:{_BETWEEN_NEGATION_AND_VALUE})\s+){{0,2}}?"
    return re.compile(
        rf"(?:(?<!{letter})(?:{words})(?!{letter})|不是|n['’]t(?!{letter}))\s*{between}"
        rf"{number}(?:\s*(?:,|(?<!{letter})(?:{joining})(?!{letter}))\s*{number})*",
        re.IGNORECASE,
    )


_BETWEEN_NEGATION_AND_VALUE = (
    r"it['’]s|it|is|are|not|equal|to|exactly|just|quite|really|actually|even"
    r"|ist|sind|genau|est|sont|são|é|sono|è|jest|son|es"  # the copulas of the other languages: "não são 12"
)


# A closing apposition that restates the sentence's value in its final form ("so the number is 10 which
# is 1,000.99m²", "She pays 250 cents, which is $2.50."): the value after it is the answer, with only a
# unit sign or a short unit after it ("4 squared", "3 dozen" are no apposition of a value).
_APPOSITION_RE = re.compile(
    rf",?\s+(?:which|that)\s+is\s+(?:\\?\$|[€£¥])?({NUMBER_TOKEN_RE.pattern})"
    r"\s*(?:[€£¥$°]|[a-zA-Z]{1,3}[²³]?)?\s*[.!]?$"
)


# An area or volume unit written against its number ("1,000.99m²", "12cm³").
_GLUED_POWER_UNIT_RE = re.compile(r"(?<=\d)(?=[a-zA-Z]{1,2}[²³])")


def without_rejections(sentence: str) -> str:
    """The sentence without the values it rejects ("not 10" and its joined values) and their negations."""
    return _rejected_re().sub(" ", sentence)


@cache
def _contrast_re() -> re.Pattern[str]:
    words = "|".join(re.escape(w) for w in sorted(CONTRASTING, key=len, reverse=True))
    return re.compile(rf"^[\s,;:，；：、—–-]*(?:(?:{words})(?![^\W\d_])[\s,;:，；：]*)?", re.IGNORECASE)


_CLAUSE_BREAK_RE = re.compile(r"[.!?。！？]\s|[.!?。！？]$|\n")


def after_rejection(text: str) -> str | None:
    """What an answer that opens by rejecting a value states instead, in any language of the cue table:
    "not 52, it is 53." -> "53.", "nicht 52, sondern 53." -> "53.", "не 52, а 53" -> "53", "不是52，而是53"
    -> "53". None when the text does not open with a rejection, or when its first sentence states no
    value after it, or guesses or bounds the one it states ("nicht 52, sondern vielleicht 53"): the
    answer is then left as written, and a rejection is never read as a value."""
    if CJK_RE.search(text[:80]):
        text = _CJK_DIGIT_RE.sub(" ", text)  # "不是479": a number written against CJK letters is still one
    opening = _rejected_re().match(text.lstrip())
    if opening is None:
        return None
    rest = _contrast_re().sub("", text.lstrip()[opening.end() :], count=1)
    end = _CLAUSE_BREAK_RE.search(rest)
    stated = rest[: end.start()] if end else rest
    if not re.search(r"\d", stated) or _doubted(stated):
        return None
    return rest


def _doubted(text: str) -> bool:
    """A guess or a bound in the text ("vielleicht 53", "at least 53", "mindestens 53")."""
    stated = without_rejections(text)
    return bool(
        BOUND_WORDS_RE.search(stated) or _HEDGE_WORDS_RE.search(text) or hedge_or_negation().search(stated)
    )


# What joins a stated value to the rejection after it: "53, а не 52", "53 and not 52", "12, but not 13".
_TRAILING_JOINER_RE = re.compile(
    r"(?:[\s,;，；]|(?<![^\W\d_])(?:a|а|and|и|but|aber|mais|pero|ma|mas|maar|men))*$", re.I
)


def without_trailing_rejection(answer: str) -> str:
    """An answer that ends by rejecting another value ("53, а не 52", "53, not 52"): the value stated
    before the rejection ("53"); the answer unchanged when there is none."""
    if CJK_RE.search(answer):
        answer = _CJK_DIGIT_RE.sub(" ", answer)
    last = None
    for match in _rejected_re().finditer(answer):
        last = match
    if last is None or answer[last.end() :].strip(" .!。！"):
        return answer
    head = _TRAILING_JOINER_RE.sub("", answer[: last.start()])
    return head if re.search(r"\d", head) else answer


@cache
def _rejected_word_re() -> re.Pattern[str]:
    """A closing rejection of a value written in words ("twelve, not thirteen", "zwölf, nicht dreizehn"):
    a negation of `REJECTING`, then one to four words ending the answer."""
    words = "|".join(re.escape(w) for w in sorted(set(REJECTING) - {"不是"}, key=len, reverse=True))
    word = r"[^\W\d_]+"
    return re.compile(
        rf"[\s,;]+(?<![^\W\d_])(?:{words})\s+({word}(?:[\s-]+{word}){{0,3}})[\s.!。！]*$", re.IGNORECASE
    )


def without_trailing_word_rejection(answer: str) -> str:
    """An answer in number words that ends by rejecting another number in words ("twelve, not
    thirteen"): the number stated before the rejection ("twelve"); the answer unchanged unless both sides
    read as numbers on their own, so "twelve, not counting the lid" keeps its rejection (and its list)."""
    match = _rejected_word_re().search(answer)
    if match is None or re.search(r"\d", answer) or spelled_value(match.group(1)) is None:
        return answer
    head = _TRAILING_JOINER_RE.sub("", answer[: match.start()])  # "двенадцать, а не тринадцать"
    return head if spelled_value(head) is not None else answer


GUESS_RE = re.compile(r"\b(?:maybe|perhaps|possibly|guess|probably|likely)\b", re.IGNORECASE)
# A label before a value ("Total: 42", "Final: 52", "Gesamt: 52", "合计：52"): one to four words of letters
# in any script (a label of one Latin letter is an option: "C: 24"), a colon, then the value.
# Words are separated by required spaces, so a long run of letters is matched in linear time (a label of
# optional separators, "(?:word\s*){1,4}", split a run of n letters n^4 ways: 200 letters took 21 s).
_LABEL_WORD = r"[^\W\d_](?:[^\W\d_]|['’.-])*"
_LABEL = rf"^[*_]*({_LABEL_WORD}(?:[ \t]+{_LABEL_WORD}){{0,3}})[*_]*[ \t]*[:：][*_ \t]*"
_LABEL_MAX_CHARS = 120
_LABEL_RE = re.compile(_LABEL + r"(?=[-+$\\\d])")
_WORD_LABEL_RE = re.compile(_LABEL + r"(?=[^\W\d_])")  # "Final: twelve"
# A label that judges, bounds, guesses or sets up its value rather than stating it as the result:
# "Wrong: 42", "At least: 42", "Maybe: 42", "Estimate: 42", "Given: 42", "Check: 42", "Step: 42".
_NOT_RESULT_LABEL_RE = re.compile(
    r"\b(?:guess\w*|estimat\w*|approx\w*|roughly|about|around|bound|given|check\w*|verif\w*|hint|note"
    r"|question|problem|example|step|case|try|attempt|draft|initial(?:ly)?|before|previous(?:ly)?|old|wait"
    r"|original|start(?:ing)?|input|known|data|prompt|suppose|assume|let|sub-?total|partial|intermediate)\b",
    re.IGNORECASE,
)


def answer_label(text: str, in_words: bool = False) -> re.Match[str] | None:
    """The label before a value that states it as the result ("Total: 42", "Final: 52"; with `in_words`,
    before a word: "Final: twelve"); None for no label, an option letter ("C: 24"), or a label that
    judges, bounds or guesses ("Wrong: 42", "At least: 42", "Maybe: 42", "Vielleicht: 42") or sets the
    value up ("Given: 42", "Check: 42")."""
    label = (_WORD_LABEL_RE if in_words else _LABEL_RE).match(text[:_LABEL_MAX_CHARS])
    if label is None or re.fullmatch(r"[A-Za-z]", label.group(1).strip()):
        return None
    words = label.group(1)
    doubted = BOUND_WORDS_RE.search(words) or GUESS_RE.search(words) or hedge_or_negation().search(words)
    return None if doubted or _NOT_RESULT_LABEL_RE.search(words) else label


GROUP_SEPARATOR_RE = re.compile(r"(?<=\d)[ ,\u00a0\u202f\u2009](?=\d{3})")


# A value after its label: a number (2500, 2,500, 2 500), with at most two words of its unit.
_LABELLED_NUMBER_RE = re.compile(
    rf"^[-+]?\\?\$?({NUMBER_TOKEN_RE.pattern})(?:[ \t]+[^\W\d_]+){{0,2}}[ \t]*[.!。]?$"
)


# A value after its label given as one variable's ("Final: x = 52", "Result: n_1 = -3"); a sum or an
# expression on either side is not one ("x + y = 52", "y = 2x + 1").
_LABELLED_ASSIGNMENT_RE = re.compile(
    rf"^\$?([A-Za-z](?:_\{{?\d+\}}?)?)[ \t]*=[ \t]*([-+]?{NUMBER_TOKEN_RE.pattern})\$?[ \t]*[.!。]?$"
)


# A label that sums up or concludes a list of labelled values ("Total:", "Sum:", "Gesamt:", "合计：").
_SUMS_UP_RE = re.compile(
    r"^[*_\s]*(?:(?:grand\s+)?total|final|sum|result|overall|altogether|in\s+all|answer|gesamt|insgesamt|summe"
    r"|ergebnis|somme|résultat|suma|resultado|итого|всего|合计|总计|总共|一共|合計)",
    re.IGNORECASE,
)


# Doubts a labelled value may carry after it that the sentence rules read elsewhere ("I think it's 48."
# states 48 in a sentence; "Total: 48 I think" is a label line hedged): a guess, a tentative or
# unchecked value, "or so".
_LABEL_DOUBT_RE = re.compile(
    r"\b(?:presumabl\w*|tentative\w*|unverified|unchecked|uncertain|estimat\w*|or\s+so|give\s+or\s+take"
    r"|I\s+(?:think|believe|guess|suppose))\b",
    re.IGNORECASE,
)


# A guess or a bound after the value an answer cue states ("The answer is 52 probably.", "Answer: 52 at
# least", "... 52 or more"): the sentence rules read these before the value, a cue's answer after it too.
_AFTER_VALUE_DOUBT_RE = re.compile(
    rf"(?:{GUESS_RE.pattern}|{_LABEL_DOUBT_RE.pattern}|\bat\s+(?:least|most)\b|\bor\s+(?:more|less|fewer)\b)",
    re.IGNORECASE,
)


def doubted_after_cue(answer_clause: str) -> bool:
    """Whether the clause after an answer cue states one number (in digits, or in words) and, after it,
    guesses or bounds it; a clause of two values ("2 (or maybe 3)") or of formulas is read whole and
    judged a hedge by the comparison."""
    numbers = list(NUMBER_TOKEN_RE.finditer(answer_clause))
    if math_segments(answer_clause):  # formulas: read whole, as two values are
        return False
    if not numbers and len(spelled_numbers(answer_clause)) == 1:  # "twelve at least"
        return bool(_AFTER_VALUE_DOUBT_RE.search(answer_clause))
    return len(numbers) == 1 and bool(_AFTER_VALUE_DOUBT_RE.search(answer_clause[numbers[0].end() :]))


def doubted_label_value(rest: str) -> bool:
    """Whether what follows a label doubts, bounds or rejects its value ("52 maybe", "52 at least",
    "52 or 53", "52 (unverified)"): such a line states no answer, in a one-line reply as in a long one."""
    return bool(
        _doubted(rest)
        or GUESS_RE.search(rest)
        or _LABEL_DOUBT_RE.search(rest)
        or re.search(r"(?<![^\W\d_])(?:or|oder|ou|o|или|或)(?![^\W\d_])", rest, re.IGNORECASE)
    )


def _assignment(rest: str) -> str | None:
    """ "x = 52" after a label, as the answer "x = 52" (which its gold "52" or "x = 52" matches); None for
    anything else, or when the line doubts or bounds it."""
    assigned = _LABELLED_ASSIGNMENT_RE.match(rest)
    if assigned is None or doubted_label_value(rest):
        return None
    return f"{assigned.group(1)} = {GROUP_SEPARATOR_RE.sub('', assigned.group(2))}"


def labelled_assignment(text: str) -> str | None:
    """ "Final: x = 52" (a label that states a value, then one variable's assignment) as "x = 52"; None
    for anything else."""
    label = answer_label(text, in_words=True) or answer_label(text)
    return _assignment(text[label.end() :].replace("**", "")) if label is not None else None


def _labelled_words(said: str) -> str | None:
    """A number in words after a label, with at most two words of its unit after it, as a number in
    digits may have ("Total: sixteen", "Total: one hundred bricks", "Total: sixteen in total"); None when
    what follows doubts or bounds it, or no leading run of words is one well-formed number."""
    words = said.split()
    if doubted_label_value(said):
        return None
    for cut in range(len(words), max(0, len(words) - 3), -1):
        if (spelled := spelled_value(" ".join(words[:cut]))) is not None:
            return None if spelled_numbers(" ".join(words[cut:])) else str(spelled)  # not a second number
    return None


def labelled_line(lines: list[str]) -> str | None:
    """The value of a closing line "Final: 52" (or "Total: 1,000 bricks"), ended with or without a full
    stop: a label that states its value as the result closes the reply, so a long reply that ends on it
    is not cut off. The last line of a list of labelled values ("Apples: 12\nPears: 15") is no answer."""
    if (
        len(lines) > 1
        and (answer_label(lines[-2].strip()) or labelled_assignment(lines[-2].strip()))
        and not _SUMS_UP_RE.search(lines[-1][:40])
    ):
        return None  # "Apples: 12\nPears: 15"; "Apples: 5\nPears: 7\nTotal: 12" is summed up by its last line
    line = lines[-1].strip()
    if (worded := answer_label(line, in_words=True)) is not None:
        said = line[worded.end() :].replace("**", "")
        if assigned := _assignment(said):
            return assigned
        return _labelled_words(said.rstrip(".!。"))  # "Final: twelve", "Total: one hundred bricks"
    label = answer_label(line)
    if label is None:
        return None
    rest = line[label.end() :].replace("**", "")
    if assigned := _assignment(rest):
        return assigned
    value = _LABELLED_NUMBER_RE.match(rest)
    if value is None or doubted_label_value(rest):
        return None  # "Final: 52 maybe", "Total: 52 at most"
    return GROUP_SEPARATOR_RE.sub("", value.group(1))  # "1,248" and "1 248" are 1248


# Spanish "no" negates ("La respuesta no es 52.", "Juan no compró 52 manzanas."); English "no" is a
# determiner ("with no remainder, 12 boxes are needed"): a negation unless the sentence reads as English.
_NO_RE = re.compile(r"(?<![^\W\d_])no(?![^\W\d_])", re.IGNORECASE)


def _states_no_value(sentence: str) -> bool:
    """A sentence that is a step or a plan, a bound or a rejection, a guess, or too long to be a result."""
    said = SPEAKER_LEAD_RE.sub("", sentence)  # "I think it's 48 apples." states 48, a value after "I think"
    opener = said if said != sentence and _VALUE_FIRST_RE.match(said) else sentence
    if not _CONCLUSION_START_RE.match(opener) and (
        _NOT_FINAL_START_RE.match(opener) or len(sentence.split()) > _STATEMENT_MAX_WORDS
    ):
        return True  # "Janet makes $18 every day." states a result; "Next, we add 18." does not
    # "less than 18", "42 is wrong", "18 so far", "Maybe it's 7.", "vielleicht 7", "不是 7"
    stated = without_rejections(sentence)
    return bool(
        BOUND_WORDS_RE.search(stated)
        or _HEDGE_WORDS_RE.search(sentence)
        or hedge_or_negation().search(stated)
        or (_NO_RE.search(stated) and language_of(sentence) != "en")  # "Juan no compró 52 manzanas."
        or _doubted_after_value(stated)  # "She has 12 apples, probably.", "12 apples or more."
    )


def _doubted_after_value(sentence: str) -> bool:
    """A guess or a bound after the sentence's last number ("12 apples, I think", "12 or more"): before
    the value it is read by the rules above; "The most likely total is 12." guesses nothing."""
    numbers = list(NUMBER_TOKEN_RE.finditer(sentence))
    return bool(numbers) and bool(_AFTER_VALUE_DOUBT_RE.search(sentence[numbers[-1].end() :]))


def _sets_up(sentence: str) -> bool:
    """A sentence opened by a label that sets up, checks or guesses what follows ("Given: 1067.",
    "Given: the side is 4.", "Check: x is 4."), before a value or before words."""
    head = sentence[:_LABEL_MAX_CHARS]
    if _LABEL_RE.match(head):
        return answer_label(sentence) is None
    return bool(_WORD_LABEL_RE.match(head)) and answer_label(sentence, in_words=True) is None


def concluding_number(region: str) -> str | None:
    """The one number of a last sentence that concludes (rule 6 of extract.py's docstring); or the one
    interval / point it states, or the roots it lists ("x = 2 and x = -3")."""
    paragraphs = paragraphs_of(region)
    if not paragraphs or not looks_complete(region):
        return None
    sentence = unbold(last_sentence(paragraphs[-1])).strip()
    if CJK_RE.search(sentence):  # "共需要2500块砖。": a number written against CJK letters is still one
        sentence = _CJK_DIGIT_RE.sub(" ", sentence)
    if len(sentence) > _LAST_SENTENCE_MAX_CHARS or not sentence.endswith((".", "!", "。", "！")):
        return None
    sentence = with_digits(sentence) or sentence  # "She has twelve apples left." states 12
    if _sets_up(sentence):
        return None  # "Given: 1067.", "Estimate: 3,317.", "Given: the side is 4.": a label that sets up
    if _states_no_value(sentence) or math_segments(sentence) or _PLAIN_FORMULA_RE.search(sentence):
        return None  # a formula: rule 5 reads those
    sentence = without_rejections(sentence)  # "It is not 12, it is 42." states 42
    sentence = _GLUED_POWER_UNIT_RE.sub(" ", sentence)  # "1,000.99m²" is the number 1,000.99 in m²
    times = _TIME_TOKEN_RE.findall(sentence)
    if len(times) == 1 and not NUMBER_TOKEN_RE.findall(_TIME_TOKEN_RE.sub(" ", sentence)):
        return times[0].strip()  # "The meeting ends at 8:34 p.m.": the one time of the sentence
    if roots := _roots(sentence):
        return roots
    if "=" in sentence:  # "x = 2, -3" is both values; "Thus 8 * 5 = 40 pages." is 40
        after = sentence.rsplit("=", 1)[1]
        tokens = NUMBER_TOKEN_RE.findall(after)
        return _values(after) or (tokens[0] if tokens else None)
    if (listed := _PLURAL_LIST_RE.search(sentence)) and (values := _values(listed.group(1))):
        return values  # "The roots are 2 and -3."
    if bracketed := _BRACKETED_RE.findall(sentence):  # "The interval is [1, 5).", "The set is {2, -3}."
        one = len(bracketed) == 1 and not NUMBER_TOKEN_RE.findall(_BRACKETED_RE.sub(" ", sentence))
        return bracketed[0] if one else None  # a number beside the group ("{2, -3} has 2 elements"): none
    distinct = set(NUMBER_TOKEN_RE.findall(sentence))
    if len(distinct) > 1 and (restated := _APPOSITION_RE.search(sentence)):
        return restated.group(1).strip()  # "10 which is 1,000.99m²": the value in its final form
    return distinct.pop() if len(distinct) == 1 else None


# A last sentence that names a thing: "The capital of France is Paris." (a few words, no number).
_WORD_PREDICATE_RE = re.compile(
    r"^(?:[A-Za-z]+\s+){1,8}(?:is|are|was|were)\s+([A-Z][A-Za-z'’-]*(?:\s+[A-Za-z'’-]+){0,2})\.$"
)


def word_predicate(region: str) -> str | None:
    """The predicate of a short last sentence that names a word answer (rule `predicate-sentence`): only
    capitalised words (a name, "Paris"), so a description ("is increasing") is never an answer; a
    negation or a second candidate stays in the predicate ("not Paris", "Paris or Lyon")."""
    paragraphs = paragraphs_of(region)
    if not paragraphs:
        return None
    sentence = SENTENCE_END_RE.split(paragraphs[-1])[-1].strip()
    match = _WORD_PREDICATE_RE.match(sentence)
    if match is None or BOUND_WORDS_RE.search(sentence):
        return None
    return match.group(1)
