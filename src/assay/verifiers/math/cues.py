"""Answer cues in other languages: where a response that writes no `\\boxed{}` states its final answer.

Policies answer in the language of the question (issue 30: "答案是 42", "Die Antwort ist 42.", "Ответ:
42" all scored 0). Each language lists, written for this table:
- `copulas`: a cue that already holds its verb ("答案是", "die Antwort ist", "la réponse est"); the answer
  follows directly;
- `nouns`: the word for "answer" or "final answer" ("答案", "Antwort", "ответ"), a cue only with a colon or
  a dash after it ("Antwort: 42"); words that also head a worked solution ("Lösung", "解") are left out,
  since a cue there would take the first line of the working for the answer;
- `or_words`: the language's "or": a second value after it keeps the answer whole (a hedge, rejected);
- `trailers`: what closes a sentence after the answer ("です", "입니다", "है", "'dir"), dropped;
- `decimal_comma`: the language writes 3,5 for 3.5 (a "1,22" cued in it is one number, see prompt.py).

English cues live in extract.py. A cue found here is named `answer-cue:<code>` in `details`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache

from assay.verifiers.math.chinese import states_quantity
from assay.verifiers.math.choices import prose_choice
from assay.verifiers.math.cue_extras import EXTRA
from assay.verifiers.math.spelled import number_words


@dataclass(frozen=True)
class Language:
    code: str
    name: str
    copulas: tuple[str, ...]
    nouns: tuple[str, ...]
    or_words: tuple[str, ...]
    trailers: tuple[str, ...] = ()
    decimal_comma: bool = False  # the language writes 3,5 for 3.5
    # what reads a closing sentence written in the language (cue_extras.py, issue 44)
    and_words: tuple[str, ...] = ()
    speakers: tuple[str, ...] = ()
    hedges: tuple[str, ...] = ()
    negations: tuple[str, ...] = ()


_BASE: tuple[Language, ...] = (
    Language(
        "zh",
        "Chinese",
        (
            "最终答案是",
            "最终答案为",
            "正确答案是",
            "正确答案为",
            "答案是",
            "答案为",
            "答案应为",
            "结果是",
            "结果为",
            "故选",
            "应选",
            "所以选",
            "因此选",
            "答案选",
        ),
        ("最终答案", "正确答案", "答案", "答"),
        ("或者", "或", "还是"),
        ("。", "．"),
    ),
    Language(
        "ja",
        "Japanese",
        ("最終的な答えは", "答えは", "正解は", "解答は", "答は", "結果は"),
        ("最終的な答え", "答え", "正解", "解答"),
        ("または", "あるいは", "もしくは"),
        ("となります", "になります", "です", "である", "だ", "。"),
    ),
    Language(
        "ko",
        "Korean",
        ("최종 답은", "정답은", "답은", "결과는"),
        ("최종 답", "정답", "답"),
        ("또는", "아니면", "혹은"),
        ("입니다", "이에요", "예요", "이다", "다"),
    ),
    Language(
        "de",
        "German",
        (
            "die endgültige antwort ist",
            "die richtige antwort ist",
            "die antwort lautet",
            "die antwort ist",
            "das ergebnis lautet",
            "das ergebnis ist",
            "das endergebnis ist",
            "ist die antwort",  # "Also ist die Antwort 42." (the verb second, after an adverb)
            "lautet die antwort",
            "ist das ergebnis",
        ),
        ("endgültige antwort", "antwort", "endergebnis", "ergebnis"),
        ("oder",),
        decimal_comma=True,
    ),
    Language(
        "fr",
        "French",
        (
            "la réponse finale est",
            "la bonne réponse est",
            "la réponse est",
            "le résultat final est",
            "le résultat est",
        ),
        ("réponse finale", "réponse", "résultat"),
        ("ou",),
        decimal_comma=True,
    ),
    Language(
        "es",
        "Spanish",
        (
            "la respuesta final es",
            "la respuesta correcta es",
            "la respuesta es",
            "el resultado final es",
            "el resultado es",
        ),
        ("respuesta final", "respuesta", "resultado"),
        ("o", "u"),
        decimal_comma=True,
    ),
    Language(
        "ru",
        "Russian",
        (
            "окончательный ответ",
            "правильный ответ",
            "ответ равен",
            "ответ будет",
            "ответом является",
            "результат равен",
        ),
        ("итоговый ответ", "ответ", "результат"),
        ("или", "либо"),
        decimal_comma=True,
    ),
    Language(
        "pt",
        "Portuguese",
        (
            "a resposta final é",
            "a resposta correta é",
            "a resposta é",
            "o resultado final é",
            "o resultado é",
        ),
        ("resposta final", "resposta", "resultado"),
        ("ou",),
        decimal_comma=True,
    ),
    Language(
        "it",
        "Italian",
        (
            "la risposta finale è",
            "la risposta corretta è",
            "la risposta è",
            "il risultato finale è",
            "il risultato è",
        ),
        ("risposta finale", "risposta", "risultato"),
        ("o", "oppure"),
        decimal_comma=True,
    ),
    Language(
        "ar",
        "Arabic",
        ("الإجابة النهائية هي", "الإجابة الصحيحة هي", "الإجابة هي", "الجواب هو", "النتيجة هي"),
        ("الإجابة النهائية", "الإجابة", "الجواب", "النتيجة"),
        ("أو",),
    ),
    Language(
        "hi",
        "Hindi",
        ("अंतिम उत्तर है", "सही उत्तर है", "उत्तर है", "अतः उत्तर", "इसलिए उत्तर"),
        ("अंतिम उत्तर", "उत्तर", "जवाब"),
        ("या", "अथवा"),
        ("होगा", "है", "।"),
    ),
    Language(
        "tr",
        "Turkish",
        ("doğru cevap", "cevap şudur", "sonuç şudur", "cevabımız"),
        ("cevap", "yanıt", "sonuç"),
        ("veya", "ya da", "yoksa"),
        ("'dir", "'dır", "'dur", "'dür", "’dir", "’dır", "dir", "dır"),
        decimal_comma=True,
    ),
    Language(
        "vi",
        "Vietnamese",
        ("đáp án cuối cùng là", "đáp án đúng là", "đáp án là", "câu trả lời là", "kết quả là", "đáp số là"),
        ("đáp án", "đáp số", "câu trả lời", "kết quả"),
        ("hoặc", "hay"),
        decimal_comma=True,
    ),
    Language(
        "id",
        "Indonesian",
        (
            "jawaban akhirnya adalah",
            "jawaban yang benar adalah",
            "jawabannya adalah",
            "jawaban adalah",
            "hasilnya adalah",
        ),
        ("jawaban akhir", "jawaban", "hasil"),
        ("atau",),
        decimal_comma=True,
    ),
    Language(
        "pl",
        "Polish",
        (
            "ostateczna odpowiedź to",
            "poprawna odpowiedź to",
            "odpowiedź to",
            "odpowiedź brzmi",
            "odpowiedź wynosi",
            "wynik wynosi",
            "wynik to",
        ),
        ("ostateczna odpowiedź", "odpowiedź", "wynik", "odp"),
        ("lub", "albo"),
        decimal_comma=True,
    ),
    Language(
        "nl",
        "Dutch",
        (
            "het uiteindelijke antwoord is",
            "het juiste antwoord is",
            "het antwoord is",
            "de uitkomst is",
            "het resultaat is",
            "is het antwoord",  # "Dus is het antwoord 42."
        ),
        ("eindantwoord", "antwoord", "uitkomst", "resultaat"),
        ("of",),
        decimal_comma=True,
    ),
    Language(
        "sv",
        "Swedish",
        ("det slutliga svaret är", "rätt svar är", "svaret är", "resultatet är", "är svaret"),
        ("slutligt svar", "svar", "svaret", "resultat"),
        ("eller",),
        decimal_comma=True,
    ),
    Language(
        "uk",
        "Ukrainian",
        ("остаточна відповідь", "правильна відповідь", "відповідь дорівнює", "відповідь буде"),
        ("відповідь", "результат"),
        ("або", "чи"),
        decimal_comma=True,
    ),
    Language(
        "cs",
        "Czech",
        ("konečná odpověď je", "správná odpověď je", "odpověď je", "výsledek je"),
        ("odpověď", "výsledek"),
        ("nebo",),
        decimal_comma=True,
    ),
    Language(
        "fa",
        "Persian",
        ("پاسخ نهایی", "پاسخ برابر است با", "جواب برابر است با"),
        ("پاسخ", "جواب"),
        ("یا",),
        ("است", "."),
    ),
    Language(
        "th",
        "Thai",
        ("คำตอบสุดท้ายคือ", "คำตอบคือ", "ผลลัพธ์คือ"),
        ("คำตอบ",),
        ("หรือ",),
    ),
)


LANGUAGES: tuple[Language, ...] = tuple(
    replace(
        language,
        and_words=EXTRA[language.code][0],
        speakers=EXTRA[language.code][1],
        hedges=EXTRA[language.code][2],
        negations=EXTRA[language.code][3],
    )
    for language in _BASE
)


# A letter of a script written without spaces between words (no \b word boundary applies there).
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u0e00-\u0e7f]")


def _phrase(text: str) -> str:
    """A phrase as a pattern: any run of spaces between its words, and word boundaries where the script
    has them (a Latin or Cyrillic cue must not match inside a longer word: "antwort" in "Antworten")."""
    body = r"\s+".join(re.escape(word) for word in text.split())
    if _UNSPACED.search(text[:1]):
        return body
    return rf"(?<![^\W\d_]){body}(?![^\W\d_])"


@cache
def cue_pattern() -> re.Pattern[str]:
    """One pattern for every cue of every language; the group named by the language code matched."""
    alternatives = []
    for language in LANGUAGES:
        copulas = "|".join(_phrase(p) for p in sorted(language.copulas, key=len, reverse=True))
        nouns = "|".join(_phrase(p) for p in sorted(language.nouns, key=len, reverse=True))
        # a copula may carry a colon too ("答案是：42"); a noun needs one ("Antwort: 42", "答案：42")
        cue = rf"(?:{copulas})\s*[:：]?|(?:{nouns})\s*(?:[:：]|\s[-—–]\s|=)"
        alternatives.append(f"(?P<{language.code}>{cue})")
    return re.compile("|".join(alternatives), re.IGNORECASE)


# A cheap first look (substring tests and one character class, no case folding in the regex engine):
# a letter of a script other than Latin, or a stem of a Latin-script cue. Most responses are English;
# the full pattern (every cue, word boundaries, case folding) then never runs.
_SCRIPTS_RE = re.compile(
    r"[\u0400-\u04ff\u0600-\u06ff\u0900-\u097f\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"
)
_LATIN_STEMS = (
    *(
        "antwo",
        "ergebnis",
        "réponse",
        "reponse",
        "résulta",
        "resulta",
        "respu",
        "risult",
        "rispost",
        "respost",
    ),
    *("uitkomst", "odp", "wynik", "jawab", "hasil", "ceva", "yanıt", "yanit", "sonuç", "sonuc", "svar"),
    *("výsled", "đáp", "trả lời", "kết quả"),
)


def _may_hold_cue(tail: str) -> bool:
    lowered = tail.lower()
    if any(stem in lowered for stem in _LATIN_STEMS):
        return True
    return not tail.isascii() and bool(_SCRIPTS_RE.search(tail))


# Only the end of a response is searched: a final answer is stated there, and a hostile response of
# many cues stays cheap.
TAIL_CHARS = 3000


def find_cues(region: str) -> list[re.Match[str]]:
    """The localised cues in the last `TAIL_CHARS` characters of `region` (positions in `region`)."""
    start = max(len(region) - TAIL_CHARS, 0)
    if not _may_hold_cue(region[start:]):
        return []
    return list(cue_pattern().finditer(region, start))


def language_of(match: re.Match[str]) -> Language:
    """The language whose cue `match` (of `cue_pattern`) found."""
    code = match.lastgroup or ""
    return next(language for language in LANGUAGES if language.code == code)


# Where an answer after a localised cue ends: a sentence mark of any script, a line end, or a comma
# before a word (", weil ...", "，因为 ...") -- a list of values ("2, 3") keeps its commas.
_END_RE = re.compile(r"[。！？；!?;\n।]|[.．]\s|[.．]$|[，,、]\s*(?=[^\W\d_]{2})")


def localised_answer(snippet: str, language: Language) -> str:
    """The answer after a localised cue, up to the end of its clause and without the language's sentence
    closer; a second value after the language's "or" keeps the sentence whole, with the "or" written in
    English so the comparer sees the hedge ("42 oder 43" -> "42 or 43"). A clause that ends in a question
    mark keeps it ("12?"): asked, not stated, it is no answer in any language."""
    snippet = snippet.lstrip(" \t:：*=—–-")  # "Правильный ответ — 418"
    snippet = speaker_lead().sub("", snippet, count=1)  # "Antwort: ich denke 3" -> "3"
    sentence = re.split(r"[。！？!?\n।]|[.．]\s", snippet, maxsplit=1)[0]
    cut = _END_RE.search(snippet)
    head = snippet[: cut.start()] if cut else snippet
    if cut and cut.group() in ("?", "？"):  # "Ответ: 12?", "答案是12吗？": asked, as "Answer: 12?" is
        return head.strip() + "?"
    if remark := _REMARK_RE.match(head.strip().rstrip(".．。")):
        # "Ответ: 1000 (за три дня).", "答案是1000（三天搬完）。": a remark in words beside the value; one
        # that offers another value ("或者2000", "но скорее 2000") keeps the clause whole, a hedge
        head = head if offers_value(remark.group(2), remark.group(1), language) else remark.group(1)
    if re.match(r"^\(?[A-J]\)?(?![A-Za-z])", head) and not prose_choice(head):
        head = sentence  # "答案：D是干扰项，B是正确的": the letter of the clause is ruled out, read on
    for word in language.or_words:
        # the word alone (after a space, a comma or a digit: "42或43"), then a value
        alone = rf"(?:(?<=[\s，,\d])|^){re.escape(word)}(?=[\s\d]|$)"
        if re.search(rf"{alone}\s*(?:[-+$\\(\d]|[A-J](?![^\W\d_]))", sentence):
            head = re.sub(rf"\s*{alone}\s*", " or ", sentence)
            break
        if after_value := _or_after_value(word).search(head):  # "1000 oder mehr", "1000或更多": a bound
            return f"{head[: after_value.start(1)].strip()} or {head[after_value.end(1) :].strip()}"
    head = head.strip().rstrip(".．。")
    for trailer in sorted(language.trailers, key=len, reverse=True):
        if head.endswith(trailer) and len(head) > len(trailer):
            head = head[: -len(trailer)].rstrip()
            break
    head = head.strip()
    value = _LEADING_NUMBER_RE.match(head)
    rest = head[value.end() :].strip() if value else ""
    if value and rest and (states_quantity(rest) or number_words(rest)):
        # "1000 Ziegel und drei", "1000块砖和三百块瓦": words after the value that state a second one are
        # no unit: two values, written as the hedge the comparer refuses
        return f"{value.group()} or {rest}"
    if unit := _NUMBER_THEN_WORDS_RE.match(head):
        return unit.group(1)  # "42 Äpfel", "42个苹果": the number with its unit words after it
    return head


# A value, then a remark in brackets that holds words of any script (three letters, or one Han character).
_REMARK_RE = re.compile(
    r"^([^()（）]*?\d[^()（）]*?)\s*[(（]([^()（）]*(?:[^\W\d_]{3}|[\u3400-\u9fff])[^()（）]*)[)）]$"
)


# A number in digits, with its separators or decimal point ("2,500", "3.5"): what a remark or a prompt writes.
DIGITS_RE = re.compile(r"\d+(?:[.,]\d+)*")
# English words that make a remark beside an answer a second thought ("2 (or maybe 3)", "2 (not sure)").
_ENGLISH_OFFERING = ("or", "maybe", "perhaps", "possibly", "probably", "not", "at least", "at most", "but")


@cache
def _offering_words(language: Language | None) -> re.Pattern[str]:
    phrases = [*language.or_words, *language.hedges, *language.negations] if language else []
    return re.compile(rf"(?:{_words_pattern([*phrases, *_ENGLISH_OFFERING])})(?!-)", re.IGNORECASE)


def offers_value(remark: str, value: str, language: Language | None = None) -> bool:
    """Whether a remark in brackets beside the answer `value` offers another value, which makes the
    answer a hedge: it writes a number in digits that the value does not ("1000 (but probably 2000)",
    "1000 (4 boxes of 250)": several numbers, as a sentence stating two is no answer), or a word of the
    language (or English) that offers an alternative, guesses or rejects ("或者两千", "oder mehr"). Any
    other remark is a comment on the value ("in three days", "三天搬完")."""
    if set(DIGITS_RE.findall(remark)) - set(DIGITS_RE.findall(value)):
        return True
    return bool(_offering_words(language).search(remark))


@cache
def _or_after_value(word: str) -> re.Pattern[str]:
    """The language's "or" after a value in the answer's clause ("1000 oder mehr", "1000 кирпичей или
    больше", "1000块或更多"): a bound or a hedge, never the value's unit words. Word boundaries as a
    cue's (`_phrase`): none in a script written without spaces."""
    return re.compile(rf"\d\D*?({_phrase(word)})", re.IGNORECASE)


_LEADING_NUMBER_RE = re.compile(rf"^[-+]?{DIGITS_RE.pattern}")
# A number followed by at most three words of letters only (a unit or a counted noun, in any script).
_NUMBER_THEN_WORDS_RE = re.compile(r"^([-+]?\d+(?:[.,]\d+)?)\s*(?:[^\W\d_A-Za-z][^\W\d_]*\s*){1,3}$")


def _words_pattern(phrases: list[str]) -> str:
    return "|".join(_phrase(p) for p in sorted(set(phrases), key=len, reverse=True))


@cache
def speaker_lead() -> re.Pattern[str]:
    """Who says the answer, opening it ("ich denke 3", "je dirais : 48", "我认为 3"), with its colon."""
    phrases = [p for language in LANGUAGES for p in language.speakers]
    return re.compile(rf"^\s*(?:{_words_pattern(phrases)})(?:\s*[:：,，]\s*|\s+|(?=\d))", re.IGNORECASE)


@cache
def hedge_or_negation() -> re.Pattern[str]:
    """A word of any language of the table that makes a closing sentence a guess ("vielleicht", "也许")
    or a bound / rejection ("nicht", "不是"): such a sentence states no answer."""
    phrases = [p for language in LANGUAGES for p in (*language.hedges, *language.negations)]
    return re.compile(rf"(?:{_words_pattern(phrases)})(?!-)", re.IGNORECASE)  # not "non-negative"


@cache
def and_words() -> frozenset[str]:
    """ "and" of every language of the table (several roots joined into one answer)."""
    return frozenset(w for language in LANGUAGES for w in language.and_words)
