"""Whole numbers written in words ("fifty-two", "one hundred and twenty", "zweiundfünfzig", "cinquante-
deux", "ciento veinte", "сто двадцать", "一百二十"), in English, German, French, Spanish, Russian and
Chinese (issue 44: "The answer is fifty-two.", "She has twelve apples left.", "Ответ: двенадцать.",
"答案是十二。" were no answer).

Two uses, both conservative:
- `spelled_value(text)`: an answer that is only a number in words ("one hundred and twenty" after a cue)
  is that number;
- `with_digits(sentence)`: a closing sentence with its number words as digits, so the rules for a
  sentence with one number read it (and a sentence that also writes digits states two numbers). Number
  words are read only where they state a quantity: never at the start of the sentence or after a
  determiner ("The two numbers are equal.", "All three angles ...", "Все три угла ..."), never before
  "of" or a multiplier ("one of the boxes", "three times as many", "два из", "в два раза"), never an
  article ("un", "ein", "una", "один") alone, and never a run that is not a well-formed number ("nineteen
  ninety", "two three", "две тысяч"). The sentence's language is the one whose function words it uses
  most (a tie reads nothing), so Spanish "once" is never read in "She did it once." and French "neuf"
  only in French.

Russian is read in the nominative (and the accusative that equals it), with the scale words agreeing with
their count ("одна тысяча", "две тысячи", "пять тысяч"); a sentence with a number word in another case
("из двенадцати", "около двадцати", "двухсот"), a collective ("трое") or "полтора" is not read, since those
cases part or bound what they count. Chinese numerals are read by chinese.py: only as a whole numeral,
before a measure word ("十二个") or ending a clause after a verb, never inside a word (一共, 十分).

Written for Assay from the languages' counting rules; Japanese, Korean and the other languages of the cue
table are not read in closing sentences (a Japanese answer of bare numerals after its cue, "答えは十二です",
is read as Chinese numerals are).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assay.verifiers.math.chinese import HAN_RE, chinese_with_digits, numeral_answer, numerals_in


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
    unread: frozenset[str] = frozenset()  # number words not read (cases, collectives): the sentence isn't


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

_RU_VALUES = (
    _numbered(
        "ноль _ два три четыре пять шесть семь восемь девять десять одиннадцать двенадцать тринадцать"
        " четырнадцать пятнадцать шестнадцать семнадцать восемнадцать девятнадцать"
    )
    | _numbered("двадцать тридцать сорок пятьдесят шестьдесят семьдесят восемьдесят девяносто", 20, 10)
    | _numbered("сто двести триста четыреста пятьсот шестьсот семьсот восемьсот девятьсот", 100, 100)
    | {"один": 1, "одна": 1, "одно": 1, "две": 2, "нуль": 0}
)
# Russian number words in the other cases ("двенадцати", "двухсот", "тысячей"), collectives ("трое") and
# "полтора": "из двенадцати", "около двенадцати", "более двухсот" bound or part what they count, and a
# case of a number is no answer form; a sentence that holds one is not read.
_RU_TEN_TO_TWENTY = [w for w, v in _RU_VALUES.items() if 5 <= v <= 20 or v == 30]
_RU_GENITIVE_UNITS = (
    "двух",
    "трех",
    "трёх",
    "четырех",
    "четырёх",
    "пяти",
    "шести",
    "семи",
    "восьми",
    "девяти",
)
_RU_DATIVE_UNITS = ("двум", "трем", "трём", "четырем", "четырём", "пяти", "шести", "семи", "восьми", "девяти")
_RU_UNREAD = (
    _words(
        "одного одной одному одним одном одну одною одни одних одними двух двум двумя трех трёх трем трём"
        " тремя четырех четырёх четырем четырём четырьмя восьми сорока девяноста ста пятидесяти шестидесяти"
        " семидесяти восьмидесяти пятьюдесятью шестьюдесятью семьюдесятью восемьюдесятью тысячу тысячей"
        " тысячам тысячами тысячах тысяче миллиону миллионом миллионе миллионам миллионами миллионах двое"
        " трое четверо пятеро шестеро семеро полтора полторы полутора"
    )
    | {f"{w[:-1]}{end}" for w in _RU_TEN_TO_TWENTY for end in ("и", "ью")}  # "двенадцати", "пятью"
    | {f"{stem}{end}" for stem in _RU_GENITIVE_UNITS for end in ("сот", "стах")}  # "двухсот", "пятистах"
    | {f"{stem}стам" for stem in _RU_DATIVE_UNITS}  # "двумстам"
    | {f"{w}стами" for w in ("двумя", "тремя", "четырьмя", "пятью", "шестью", "семью", "восемью", "девятью")}
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
    _Counting(
        "ru",
        _RU_VALUES,
        frozenset(),  # the hundreds are words of their own ("двести"), as in Spanish
        {"тысяча": 1000, "тысячи": 1000, "тысяч": 1000}
        | {"миллион": 10**6, "миллиона": 10**6, "миллионов": 10**6},
        frozenset(),
        _words("один одна одно"),  # also "alone", "one of", "the same" ("одно и то же")
        _words(
            "все эти те оба обе каждые первые последние другие остальные следующие какие любые его её ее их"
            " мои наши ваши свои минус плюс почти примерно приблизительно"
        ),
        _words(
            "из раз раза с на целых целая целые треть трети третей четверть четверти четвертей половина"
            " половины вторых третьих четвертых четвёртых пятых шестых седьмых восьмых девятых десятых сотых"
            " тысячных"
        ),
        _words(
            "и в не на что это у есть всего осталось остался осталась остались ответ она он они мы так как"
            " с по из итого нужно получается значит будет равно равен всех её их"
        ),
        unread=_RU_UNREAD,
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


def _agrees(counting: _Counting, count: int, scale: str) -> bool:
    """Whether a Russian scale word takes the form its count asks for: "одна тысяча", "двадцать одна
    тысяча" (1), "две тысячи" (2 to 4), "пять тысяч", "двенадцать тысяч" (5 and more, 11 to 14); other
    languages write one form."""
    if counting.code != "ru":
        return True
    last = count % 100 if 11 <= count % 100 <= 14 else count % 10
    if scale in ("тысяча", "миллион"):
        return last == 1
    if scale in ("тысячи", "миллиона"):
        return 2 <= last <= 4
    return last != 1 and not 2 <= last <= 4


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
        bare = current == 0 and (led_by_a or counting.code in ("fr", "es", "ru"))  # "cent", "mil", "тысяча"
        if word in counting.joiners and end is not None and not joined and _joins(counting, last):
            joined = True
            position += 1
            continue
        if word in counting.hundreds and (1 <= current <= 9 or bare):
            current = max(current, 1) * 100
            last = current
        elif (
            word in counting.scales
            and counting.scales[word] < cap
            and (current or bare)
            and _agrees(counting, max(current, 1), word)
        ):
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
    "zweiundfünfzig", "cinquante-deux", "ciento veinte", "сто двадцать", "一百二十", "十二个"); None for
    anything else."""
    if HAN_RE.search(text):
        return numeral_answer(text.strip().rstrip(".!。！"))
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
    left." -> "She has 12 apples left.", "一共有十二个。" -> "一共有 12 个。"); digits it writes stay, so
    "twelve apples after 13 days" states two numbers. None when the sentence holds no number word, or
    holds one that states no value or cannot be read soundly (see the module docstring)."""
    if HAN_RE.search(sentence):
        return chinese_with_digits(sentence)
    tokens = _tokens(sentence)
    words = [t for t, _, _ in tokens]
    counting = _language(words)
    if counting is None or counting.unread.intersection(words):
        return None  # "Осталось пять из двенадцати.": a number in a case no rule reads
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
    text = text[-20_000:]  # the question is at a long prompt's end
    words = [t for t, _, _ in _tokens(text)]
    return {run.value for counting in COUNTINGS for run in _runs(words, counting)} | numerals_in(text)


def number_words(text: str) -> set[int]:
    """The numbers written in words in `text`, in its language and any position, but for an article or
    an ambiguous word alone ("one of them", "neuf"): what a text that writes digits also states."""
    words = [t for t, _, _ in _tokens(text)]
    counting = _language(words)
    if counting is None:
        return set()
    return {run.value for run in _runs(words, counting) if not _alone(words, run, counting)}


def language_of(sentence: str) -> str | None:
    """The code of the table language a sentence is written in (by its function words and number words),
    None when no language leads: a word two languages share is read as the sentence's language's."""
    counting = _language([t for t, _, _ in _tokens(sentence[:300])])
    return counting.code if counting else None
