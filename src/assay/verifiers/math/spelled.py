"""Whole numbers written in words ("fifty-two", "one hundred and twenty", "zweiundfünfzig", "cinquante-
deux", "ciento veinte"), in English, German, French and Spanish (issue 44: "The answer is fifty-two.", "She
has twelve apples left." were no answer).

Two uses, both conservative:
- `spelled_value(text)`: an answer that is only a number in words ("one hundred and twenty" after a cue)
  is that number;
- `with_digits(sentence)`: a closing sentence that writes no digit, with its number words as digits, so
  the rules for a sentence with one number read it. Number words are read only where they state a
  quantity: never at the start of the sentence or after a determiner ("The two numbers are equal.", "All
  three angles ..."), never before "of" or a multiplier ("one of the boxes", "three times as many"), never
  an article ("un", "ein", "una") alone, and never a run that is not a well-formed number ("nineteen
  ninety", "two three"). The sentence's language is the one whose function words it uses most (a tie
  reads nothing), so Spanish "once" is never read in "She did it once." and French "neuf" only in French.

Written for Assay from the languages' counting rules; Russian, Chinese and the other languages of the
cue table are not read (their number words inflect or sit inside other words: 一共, 十分).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class _Counting:
    code: str
    values: dict[str, int]  # words that add their value ("twenty", "two", "ciento", "doscientos")
    hundreds: frozenset[str]  # words that multiply what precedes by 100 ("hundred", "cent")
    scales: dict[str, int]  # words that multiply by 1000 and more ("thousand", "mille", "mil")
    joiners: frozenset[str]  # words inside a number ("and", "et", "y", "und")
    articles: frozenset[str]  # "one" that is also an article: never a number alone ("un", "una")
    determiners: frozenset[str]  # before a number word: it names things, states no value ("the two")
    blockers: frozenset[str]  # after a number word: a part or a multiplier ("of", "times")
    markers: frozenset[str]  # the language's function words (which language a sentence is in)
    vigesimal: frozenset[int] = frozenset()  # tens after which a value up to 19 is added (French 60, 80)


def _numbered(text: str, start: int = 0, step: int = 1) -> dict[str, int]:
    """ "zero one two" -> {"zero": 0, "one": 1, "two": 2}; "_" holds a place without a word."""
    return {word: start + step * index for index, word in enumerate(text.split()) if word != "_"}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_EN_VALUES = _numbered(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
    " seventeen eighteen nineteen"
) | _numbered("twenty thirty forty fifty sixty seventy eighty ninety", 20, 10)
_FR_VALUES = _numbered(
    "zéro un deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze quinze seize"
) | _numbered("vingt trente quarante cinquante soixante", 20, 10)
_ES_VALUES = (
    _numbered(
        "cero uno dos tres cuatro cinco seis siete ocho nueve diez once doce trece catorce quince dieciséis"
        " diecisiete dieciocho diecinueve veinte veintiuno veintidós veintitrés veinticuatro veinticinco"
        " veintiséis veintisiete veintiocho veintinueve"
    )
    | _numbered("treinta cuarenta cincuenta sesenta setenta ochenta noventa", 30, 10)
    | _numbered(
        "ciento doscientos trescientos cuatrocientos quinientos seiscientos setecientos ochocientos"
        " novecientos",
        100,
        100,
    )
)

COUNTINGS: tuple[_Counting, ...] = (
    _Counting(
        "en",
        _EN_VALUES,
        _words("hundred"),
        {"thousand": 1000, "million": 10**6, "billion": 10**9},
        _words("and"),
        _words("one"),  # also a pronoun: "the correct one is (C)", "one of them", "no one"
        _words(
            "the these those all both each every any no its their his her our my your first last next other"
            " only same another which whose what some several many few"
        ),
        _words("of times fold halves half thirds third quarters quarter fourths fifths another"),
        _words(
            "the is are was were has have had there of and so it she he they we in to left makes needs gets"
            " total altogether answer"
        ),
    ),
    _Counting(
        "fr",
        _FR_VALUES | {"une": 1, "quatre-vingt": 80, "quatre-vingts": 80},
        _words("cent cents"),
        {"mille": 1000, "million": 10**6, "millions": 10**6},
        _words("et"),
        _words("un une"),
        _words("les des ces tous toutes chaque premiers premières derniers dernières autres seuls seules"),
        _words("de d fois demi demie tiers quarts quart sur"),
        _words("le la les est sont il elle a reste restent au en donc des une faut réponse"),
        vigesimal=frozenset({60, 80}),
    ),
    _Counting(
        "es",
        _ES_VALUES | {"un": 1, "una": 1, "cien": 100},
        frozenset(),
        {"mil": 1000, "millón": 10**6, "millones": 10**6},
        _words("y"),
        _words("un una uno"),
        _words("los las estos estas esos esas todos todas ambos ambas cada primeros últimos otros otras"),
        _words("de del veces medio media tercios cuartos"),
        _words("el la los las es son hay tiene tienen quedan queda en que por lo total respuesta"),
    ),
    _Counting(
        "de",
        {},  # German writes a number as one word: read by `_german`
        frozenset(),
        {},
        frozenset(),
        _words("ein eine einen einem einer"),
        _words(
            "die der das den dem des diese dieser diesen alle allen beide beiden jede jeder ersten letzten"
            " anderen nur"
        ),
        _words("von mal halbe drittel viertel"),
        _words("der die das ist sind hat haben es und insgesamt noch bleiben bleibt sie er wir antwort"),
    ),
)

_DE_UNITS = _numbered("_ ein zwei drei vier fünf sechs sieben acht neun")
_DE_SMALL = _DE_UNITS | {
    "eins": 1,
    "null": 0,
    "zehn": 10,
    "elf": 11,
    "zwölf": 12,
    "sechzehn": 16,
    "siebzehn": 17,
}
_DE_SMALL |= {f"{unit}zehn": 10 + value for unit, value in _DE_UNITS.items() if value in (3, 4, 5, 8, 9)}
_DE_TENS = _numbered("zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig", 20, 10)


def _german_below_100(word: str) -> int | None:
    if word in _DE_SMALL:
        return _DE_SMALL[word]
    if word in _DE_TENS:
        return _DE_TENS[word]
    unit, _, tens = word.partition("und")  # "zweiundfünfzig"
    return _DE_UNITS[unit] + _DE_TENS[tens] if unit in _DE_UNITS and tens in _DE_TENS else None


def _german(word: str) -> int | None:
    """A German number word, written as one word ("zweitausendfünfhundert", "einhundertzwölf")."""
    word = word.lower()
    total = 0
    for scale, size in (("tausend", 1000), ("hundert", 100)):
        if scale in word:
            left, _, word = word.partition(scale)
            count = (
                1
                if left in ("", "ein")
                else (_german_below_100(left) if size == 1000 else _DE_UNITS.get(left))
            )
            if count is None or count == 0 or (size == 1000 and "tausend" in word):
                return None
            total += count * size
            if not word:
                return total
    small = _german_below_100(word) if word else None
    return None if small is None else total + small


# Number words that are also ordinary words of a table language or of English ("neuf" is "new", "once"
# and "cent" are English, "dos" is Portuguese "of the", "mil" a unit): read only inside a longer number
# ("dix-neuf", "ciento once"), never alone.
_AMBIGUOUS = frozenset({"neuf", "once", "cent", "dos", "mil", "elf", "null", "sept"})


def _place(value: int) -> int:
    return 10 ** (len(str(value)) - 1) if value else 1


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """Lower-cased words with their positions; a hyphen splits a word ("fifty-two", "soixante-dix"),
    except French "quatre-vingt(s)", which is one number (80)."""
    out: list[tuple[str, int, int]] = []
    for match in re.finditer(r"[^\W\d_]+(?:-[^\W\d_]+)*", text):  # "it's" is "it", "s"
        start = match.start()
        parts = match.group(0).lower().split("-")
        while parts:
            part = parts.pop(0)
            if part == "quatre" and parts and parts[0] in ("vingt", "vingts"):
                part += "-" + parts.pop(0)
            out.append((part, start, start + len(part)))
            start += len(part) + 1
    return out


@dataclass
class _Run:
    start: int  # token index
    end: int  # token index after the run
    value: int


def _runs(tokens: list[str], counting: _Counting) -> list[_Run]:
    """The number runs of a token list, longest first from the left."""
    runs: list[_Run] = []
    index = 0
    while index < len(tokens):
        run = _read_run(tokens, index, counting)
        if run is None:
            index += 1
            continue
        runs.append(run)
        index = run.end
    return runs


def _number_of(word: str, counting: _Counting) -> int | None:
    if counting.code == "de":
        return _german(word) if word not in counting.articles else None
    return counting.values.get(word)


def _joins(counting: _Counting, last: int) -> bool:
    """Whether the language's "and" may follow `last` inside a number: English "two hundred and twenty",
    French "vingt et un", Spanish "cincuenta y dos" (never "twelve and three": that is two numbers)."""
    if counting.code == "en":
        return last >= 100
    return 20 <= last <= 90 and last % 10 == 0


def _read_run(tokens: list[str], index: int, counting: _Counting) -> _Run | None:
    """The longest well-formed number that starts at `tokens[index]`; None when none does. Each value
    added within a group must be below the place of the one before ("twenty two", not "two twenty";
    French adds up to 19 after 60 and 80: "soixante-dix-sept"), a hundred multiplies one digit, and
    scales ("thousand", "mille") come in falling order."""
    total, current, last, cap = 0, 0, 0, 10**12
    position, end = index, None
    led_by_a = counting.code == "en" and tokens[index] == "a"  # "a hundred", "a thousand"
    if led_by_a:
        position += 1
    joined = False
    while position < len(tokens):
        word = tokens[position]
        number = _number_of(word, counting)
        bare = current == 0 and (led_by_a or counting.code in ("fr", "es"))  # "cent", "mille", "mil"
        if word in counting.joiners and end is not None and not joined and _joins(counting, last):
            joined = True
            position += 1
            continue
        if word in counting.hundreds and (1 <= current <= 9 or bare):
            current = max(current, 1) * 100
            last = current
        elif word in counting.scales and counting.scales[word] < cap and (current or bare):
            total += max(current, 1) * counting.scales[word]
            current, last, cap = 0, counting.scales[word], counting.scales[word]
        elif number is not None and (
            last == 0 or number < _place(last) or (last in counting.vigesimal and number < 20)
        ):
            if joined and number >= 20 and counting.code != "en":
                break  # "cincuenta y dos", "vingt et un": a unit after "y" / "et"
            current += number
            last = number
        else:
            break
        joined = False
        position += 1
        end = position
        led_by_a = False
    if end is None:
        return None
    return _Run(index, end, total + current)


def _alone(tokens: list[str], run: _Run, counting: _Counting) -> bool:
    """A run of one word that is an article or an ambiguous word ("un", "neuf"): not read as a number."""
    word = tokens[run.start]
    after = tokens[run.end] if run.end < len(tokens) else ""
    if word == "neuf" and after.endswith(("s", "x")):
        return False  # "neuf pommes": nine before a plural noun; the adjective follows it ("un livre neuf")
    return run.end - run.start == 1 and (word in counting.articles or word in _AMBIGUOUS)


def _counted(words: set[str], counting: _Counting) -> int:
    """How many of the words are the language's own number words ("cuatrocientos", "zweiundfünfzig")."""
    return sum(
        word not in counting.articles
        and (word in counting.hundreds or word in counting.scales or _number_of(word, counting) is not None)
        for word in words
    )


def _language(words: list[str]) -> _Counting | None:
    """The counting of the language whose function words and number words the sentence uses most; None
    on a tie."""
    said = set(words)
    scores = sorted(((len(said & c.markers) + _counted(said, c), c.code) for c in COUNTINGS), reverse=True)
    if scores[0][0] == 0 or scores[0][0] == scores[1][0]:
        return None
    return next(c for c in COUNTINGS if c.code == scores[0][1])


def spelled_value(text: str) -> int | None:
    """The number an answer written only in number words states ("one hundred and twenty",
    "zweiundfünfzig", "cinquante-deux", "ciento veinte"); None for anything else."""
    tokens = [t for t, _, _ in _tokens(text.strip().rstrip(".!。"))]
    if not tokens or re.search(r"\d", text):
        return None
    for counting in COUNTINGS:
        run = _read_run(tokens, 0, counting)
        if run is not None and run.end == len(tokens) and not _alone(tokens, run, counting):
            return run.value
    return None


def with_digits(sentence: str) -> str | None:
    """The sentence with the number words that state a quantity written as digits ("She has twelve apples
    left." -> "She has 12 apples left."); None when the sentence writes a digit, holds no number word,
    or holds one that states no value or cannot be read soundly (see the module docstring)."""
    if re.search(r"\d", sentence):
        return None
    tokens = _tokens(sentence)
    words = [t for t, _, _ in tokens]
    counting = _language(words)
    if counting is None:
        return None
    runs = _runs(words, counting)
    if not runs:
        return None
    out, cursor = [], 0
    for run in runs:
        before = words[run.start - 1] if run.start else None
        after = words[run.end] if run.end < len(words) else None
        if (
            before is None
            or before in counting.determiners
            or (after is not None and after in counting.blockers)
            or _alone(words, run, counting)
        ):
            return None  # "The two numbers ...", "one of the boxes", "three times as many", "un"
        out.append(sentence[cursor : tokens[run.start][1]])
        out.append(str(run.value))
        cursor = tokens[run.end - 1][2]
    return "".join(out) + sentence[cursor:]


def spelled_numbers(text: str) -> set[int]:
    """Every number written in words in `text`, in any table language and any position (the generous
    reading: used for what a prompt already states, where reading more is the safe side)."""
    words = [t for t, _, _ in _tokens(text[-20_000:])]  # the question is at a long prompt's end
    return {run.value for counting in COUNTINGS for run in _runs(words, counting)}


def language_of(sentence: str) -> str | None:
    """The code of the table language a sentence is written in (by its function words and number words),
    None when no language leads: a word two languages share is read as the sentence's language's."""
    counting = _language([t for t, _, _ in _tokens(sentence[:300])])
    return counting.code if counting else None
