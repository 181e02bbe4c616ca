"""Multiple choice: which option letter an answer names, in an answer string, in prose, or via the prompt.

A capital letter is an option only where it cannot be a word. "A" and "I" are also an English article and
pronoun: "A total of 48." and "I think it is 48." open sentences, they do not choose options A and I
(issue 30: both were read as letters, so gold 48 scored 0 and gold "A" scored 1). A letter is an option
when it stands alone, is bracketed or bold ("(C)", "**C**"), is followed by an option delimiter ("C.",
"C)", "C:"), follows an option word ("option C", "choice (C)"), or is followed by a non-word ("C 24",
"C = 24"); a letter followed by a lower-case word ("A total", "I think") is a word. Letters listed
together ("A or C", "(A) and (C)") are a hedge.

In prose (rule `choice-prose`): the one letter of the last sentence that the sentence does not rule out.
"It can't be A or B, so C." names C; "(C) is correct" names C; "either B or C" names two (a hedge).

With a prompt (an `Item.prompt` listing options "(A) 12 (B) 18 ..." or "A. 12\\nB. 18"), a letter answers
a gold written as the option's text and the option's text answers a gold letter (rule
`choice-from-prompt`).
"""

from __future__ import annotations

import re

from assay.verifiers.math.formulas import math_segments

LETTERS = "ABCDEFGHIJ"
# An option word before a letter: "option C", "choice (B)", "Antwort C", "选项 C", "答案 C".
_OPTION_WORD = (
    r"(?:option|choice|answer|opci[óo]n|option|antwort|réponse|respuesta|ответ|选项|答案|選択肢|보기)"
)
# ... or an article right before a lone letter ("La respuesta correcta es la C.", "c'est le B").
_OPTION_PREFIX_RE = re.compile(
    rf"^(?:{_OPTION_WORD})\s*[:：]?\s*|^(?:la|el|le|lo|the)\s+(?=\(?[A-J]\)?(?:[\s.,;:!?]|$))", re.IGNORECASE
)
# Words that may follow a letter used as a letter ("A or B", "C is correct", "B, since ...").
_AFTER_LETTER_WORDS = frozenset(
    {"or", "and", "is", "was", "are", "seems", "looks", "must", "should", "would", "fits", "works", "matches"}
    | {"because", "since", "as", "then", "so", "nor", "gives", "holds", "cannot", "can't", "isn't", "alone"}
)
# A letter runs into a word when a letter follows it; not a CJK character, which needs no space between
# words ("答案：B是正确的": B, then "is correct").
_NOT_A_WORD_AFTER = r"(?![\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef])"
# A dash that opens a justification ("B - energy is conserved"), not "B - x" (a difference).
_DASH_PROSE_RE = re.compile(r"^\s+[-–—]\s+(?:[A-Za-z]{2,}[,;]?\s+){2,}[A-Za-z]{2,}")
# One bracketed, bold or bare letter as a token of a sentence.
_TOKEN_RE = re.compile(
    rf"\*\*\(?([A-J])\)?\*\*|\(([A-J])\)|\[([A-J])\]|(?<![\w\\'’])([A-J])(?!{_NOT_A_WORD_AFTER}[\w'’(])"
)
# Words that rule out the letters of their clause ("can't be A or B", "A is wrong", "not D").
_NEGATION_RE = re.compile(
    r"\b(?:not|no|never|cannot|can't|isn't|doesn't|don't|fails?|wrong|incorrect|false|impossible|out"
    r"|rule[sd]?\s+out|eliminat\w*|exclude\w*|except|neither|nor|instead\s+of|rather\s+than|distractors?)\b"
    r"|n't\b|不|错|干扰|排除",
    re.IGNORECASE,
)
# Where one clause of a sentence ends and the next begins ("A fails, and B is wrong, so C").
_CLAUSE_SPLIT_RE = re.compile(
    r"[,;:—–，；：。、]|\.\s|\s-\s(?=[A-Za-z]{2,}\s)"
    r"|\s(?:and|but|so|thus|therefore|hence|which\s+leaves|leaving|while|whereas)\s",
    re.IGNORECASE,
)


# An operator right before a bare letter makes it a term of an expression: an antiderivative's constant of
# integration (`2*x**10 - x + C`) is not option C (reasoning-gym's integration golds all scored 0 that
# way). A minus counts only after an operand ("x - C"), not as a dash after a word ("Answer - C").
_TERM_BEFORE_RE = re.compile(r"(?:[+*/^]|(?:^|[^A-Za-z])[A-Za-z0-9)\]}]\s*-)\s*$")


def _is_word(letter: str, after: str) -> bool:
    """Whether a capital letter is a word ("A total", "I think", "I'd") rather than an option letter."""
    if letter not in "AI":
        return False  # no other capital letter is an English word
    if re.match(r"['’]\w", after):  # "I'd", "I'm", "A's"
        return True
    follow = re.match(r"\s+([a-z][\w'’]*)", after)
    return bool(follow and follow.group(1) not in _AFTER_LETTER_WORDS)


def read_letters(text: str) -> tuple[str, str] | list[str] | None:
    """The option an answer string names: (letter, the rest of the string), several letters (a hedge), or
    None when the string is not a choice ("A total of 48", "I think it is 48", "x = 2")."""
    text = _OPTION_PREFIX_RE.sub("", text.strip()) if _OPTION_PREFIX_RE.match(text.strip()) else text.strip()
    match = re.match(
        rf"^(?:[(\[]\s*([A-J])\s*[)\]]|\*\*\(?([A-J])\)?\*\*|([A-J])(?!{_NOT_A_WORD_AFTER}[\w\\'’]))", text
    )
    if match is None:
        return None
    letter = match.group(1) or match.group(2) or match.group(3)
    after = text[match.end() :]
    if match.group(3) and _is_word(letter, after):
        return None
    rest = re.sub(r"^\s*[.:)]?\s*", "", after).strip()
    if rest[:1] in "=<>^_+*/-" and rest and not _DASH_PROSE_RE.match(after):
        return None  # "A = 2", "B^2": an expression in a variable named A or B
    named = prose_choice(text)
    if len(named) > 1:
        return named  # "B and C", "A or B is correct", "(A) 10 (B) 12": a hedge
    if not named:
        return None  # "C is not correct"
    return (letter, rest) if named[0] == letter else (named[0], "")


def prose_choice(sentence: str) -> list[str]:
    """The letters a sentence names and does not rule out: ["C"] for "It can't be A or B, so C." and "A
    is wrong and B is wrong, therefore C", ["B", "C"] for "It is either B or C." (a hedge), [] for none.
    A clause that holds a negation rules out every letter in it."""
    keep: list[str] = []
    for clause in _CLAUSE_SPLIT_RE.split(sentence.replace("**", " ")):
        letters = []
        for match in _TOKEN_RE.finditer(clause):
            letter = match.group(1) or match.group(2) or match.group(3) or match.group(4)
            after = clause[match.end() :]
            variable = re.match(r"\s*[=<>^_+*/-]", after) and not _DASH_PROSE_RE.match(after)
            term = _TERM_BEFORE_RE.search(clause[: match.start()])
            if match.group(4) and (_is_word(letter, after) or variable or term):
                continue  # "A total", "B = 2", "x + C": a word, a variable or a term of an expression
            letters.append(letter)
        if letters and not _NEGATION_RE.search(clause):
            keep.extend(letters)
    return list(dict.fromkeys(keep))


# An option letter the rest of its clause calls right ("B is the correct choice", "C is correct, D is a
# distractor"): the subject is the answer (rule `choice-judged`), where a predicate would be.
_LETTER_JUDGED_RE = re.compile(
    r"^\(?[A-J]\)?\s+(?:is|was|would\s+be|must\s+be|seems)\s+(?:[a-z]+\s+){0,3}"
    r"(?:correct|right|best|true|answer|wrong|incorrect|false|distractor)\b"
)


def judged_letter(clause: str) -> bool:
    """Whether a clause opens with an option letter that the rest of it judges ("B is the correct
    choice", "D is a distractor, B is correct"): the letters are the answer, not the predicate."""
    return bool(_LETTER_JUDGED_RE.match(clause))


_SENTENCE_MAX_CHARS = 300
# A last sentence that chooses: it names a choice word, or ends on its letter ("..., so C").
_CHOOSING_RE = re.compile(
    r"\b(?:option|choice|answer|correct|right|so|thus|therefore|hence|pick|choose|select|go\s+with)\b"
    r"|(?:\(?[A-J]\)?|\*\*\(?[A-J]\)?\*\*)[.!]?\s*$",
    re.IGNORECASE,
)


def choosing_sentence(region: str) -> str | None:
    """The option letters a last sentence chooses ("It can't be A or B, so C." -> "(C)"), several joined
    by "or" so the comparer sees the hedge; None when it names no letter or does not choose."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", region.strip()) if p.strip()]
    if not paragraphs:
        return None
    sentence = re.split(r"(?<=[.!?])\s+", paragraphs[-1].rsplit("\n", 1)[-1])[-1]
    if len(sentence) > _SENTENCE_MAX_CHARS or math_segments(sentence) or not _CHOOSING_RE.search(sentence):
        return None
    letters = prose_choice(sentence)
    return " or ".join(f"({letter})" for letter in letters) or None


# Options listed in a prompt: "(A) 12", "A. 12", "A) 12", "A: 12", on their own lines or in one line.
_PROMPT_OPTION_RE = re.compile(
    r"(?:^|\s)(?:\(([A-J])\)|([A-J])[.):])\s*(.+?)(?=\s+(?:\([A-J]\)|[A-J][.):])\s|\n|$)", re.MULTILINE
)


def prompt_options(prompt: str) -> dict[str, str]:
    """The options a multiple-choice prompt lists, letter -> option text, when they run A, B, C, ... in
    order (anything else is not read as an option list, so a stray "A." in the question is no option)."""
    found: dict[str, str] = {}
    for match in _PROMPT_OPTION_RE.finditer(prompt[-4000:]):
        letter = match.group(1) or match.group(2)
        text = match.group(3).strip().rstrip(",;")
        if letter == "A":
            found = {}
        if letter == LETTERS[len(found)] and text:
            found[letter] = text
    return found if len(found) >= 2 else {}
