"""Whole numbers in Chinese numerals (十二, 二十二, 一百二十, 两千, 一万零五), for spelled.py (issue 44).

A numeral is read only when it is written the way the counting writes it, checked by writing the value
back: "一百二" (a colloquial 120), "二三" ("two or three"), "千万" ("by all means"), "万一" ("in case") and
"十两" ("ten taels") are no numbers; 两 stands for 2 only before 百, 千 or 万, or alone before a measure
word ("两个"). Numerals also sit inside words (一共 "altogether", 十分 "very", 一些 "some", 一样 "same",
三角形 "triangle", 一半 "half"), so in a sentence a numeral states a quantity only before a measure word
("十二个", "二十五元") or at the end of a clause after a verb ("一共是一百二十。"); never as an
ordinal (第三), after a determiner or a bound ("这三个", "每三个", "约十个"), or before a bound ("十二个
以上", "十个左右"). A sentence that holds a number these rules cannot read ("十几个", "二十多", "百分之
二十", "三点五") is not read at all; a fraction or a percent is read as a whole answer (`fraction_value`,
`percent_value`). Japanese and Korean sentences are not read (kana and hangul).

Written for Assay from the counting rules of Modern Standard Chinese.
"""

from __future__ import annotations

import re
from fractions import Fraction

_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_UNITS = {"十": 10, "百": 100, "千": 1000}
_WRITTEN_DIGITS = "零一二三四五六七八九"
NUMERAL_RE = re.compile(r"[零一二两三四五六七八九十百千万]+")
_KANA_OR_HANGUL_RE = re.compile(r"[\u3040-\u30ff\uac00-\ud7af]")
HAN_RE = re.compile(r"[\u3400-\u9fff]")
_MAX = 10**8  # up to 9999 万

# Measure words after which a numeral counts things; left out are those that make other words with a
# numeral or are units with a prefix of their own: 分 (十分 "very"), 次 (二次方程 "quadratic"), 位 (三位数
# "three-digit"), 角 (三角形), 米 and 克 (三千米: 3000 m or 3 km), 年 (二年级 "second grade").
_MEASURES = (
    *("个", "只", "本", "块", "张", "条", "支", "辆", "件", "棵", "颗", "枚", "朵", "根", "瓶", "盒"),
    *("箱", "杯", "碗", "包", "台", "页", "岁", "天", "人", "名", "元"),
)
_CLAUSE_END = "。！？!?，,；;：:）)"
# Before a numeral: an ordinal, a determiner, "each", "about", "nearly", "top/last (n)", "several", a
# fraction's numerator ("三分之二个").
_NAMES_OR_BOUNDS = ("第", "这", "那", "哪", "每", "各", "其", "前", "后", "约", "近", "几", "数", "余", "之")
# After its measure word: a bound or an approximation ("十二个以上", "十个左右", "三个多"), a time
# relative to it ("三天后"), a part ("三个之中").
_BOUNDED_AFTER = ("以上", "以下", "左右", "上下", "多", "余", "来", "之", "后", "前", "内", "中")
# After a bare numeral: it is approximate ("十几", "二十多", "三百余"), or a decimal ("三点五").
_APPROXIMATE_AFTER = ("多", "几", "余", "来", "点")
# Before a numeral that ends its clause without a measure word ("一共是一百二十。")
_VERBS = ("是", "为", "于", "共", "有", "剩", "得")


def _section(n: int) -> str:
    """1 to 9999 as written inside a number, with 零 for skipped places ("一千零五") and 一十 for ten."""
    out, skipped = "", False
    for unit, size in (("千", 1000), ("百", 100), ("十", 10), ("", 1)):
        digit = n // size % 10
        if digit:
            out += ("零" if skipped else "") + _WRITTEN_DIGITS[digit] + unit
            skipped = False
        elif out:
            skipped = True
    return out


def _written(n: int) -> str:
    """`n` (0 to 10**8 - 1) as the counting writes it with 二 for two, leading 十 without its 一."""
    if n == 0:
        return "零"
    high, low = divmod(n, 10_000)
    text = f"{_section(high)}万" if high else ""
    if low:
        text += ("零" if high and low < 1000 else "") + _section(low)
    return text[1:] if text.startswith("一十") else text


def _read(text: str) -> int:
    """The value of a run of numerals read place by place, well formed or not (checked by `numeral`)."""
    total, section, digit = 0, 0, None
    for char in text:
        if char in _DIGITS:
            digit = _DIGITS[char]
        elif char in _UNITS:
            section += (1 if digit is None else digit) * _UNITS[char]
            digit = None
        else:  # 万
            total += (section + (digit or 0)) * 10_000
            section, digit = 0, None
    return total + section + (digit or 0)


def numeral(text: str, counted: bool = False) -> int | None:
    """The value of `text` when it is one well-formed numeral, else None; a lone 两 only when `counted`
    (a measure word follows: "两个")."""
    if not NUMERAL_RE.fullmatch(text) or len(text) > 20:
        return None
    if text == "两":
        return 2 if counted else None
    # 两 for 二 before 百 and 千, and before 万 when it is the whole count of 万 ("两万", not "十两万")
    plain = re.sub(r"两(?=[百千])|^两(?=万)", "二", text)
    plain = plain[1:] if plain.startswith("一十") else plain
    value = _read(text)
    return value if value < _MAX and _written(value) == plain else None


def numeral_answer(text: str) -> int | None:
    """An answer that is a numeral, alone or with one measure word ("十二", "十二个", "两个"); "一个" is
    "a", not one."""
    if (value := numeral(text)) is not None:
        return value
    measure = next((m for m in _MEASURES if text.endswith(m)), None)
    if measure is None or text[: -len(measure)] == "一":
        return None
    return numeral(text[: -len(measure)], counted=True)


_TEXT, _UNREAD = -1, -2  # what `_quantity` says of a numeral that states no value


def _quantity(sentence: str, match: re.Match[str]) -> int:
    """The value a numeral of the sentence states; `_TEXT` for a numeral inside a word or an ordinal
    (left as it is), `_UNREAD` for a number no rule here reads (the sentence is then not read)."""
    run, before, after = match.group(0), sentence[: match.start()], sentence[match.end() :]
    measure = next((m for m in _MEASURES if after.startswith(m)), None)
    value = numeral(run, counted=measure is not None)
    if before.endswith("第"):
        return _TEXT  # 第三: an ordinal names a place
    if measure is not None and value is not None and run != "一":
        rest = after[len(measure) :]
        if before.endswith(_NAMES_OR_BOUNDS) or rest.startswith(_BOUNDED_AFTER):
            return _UNREAD  # "这三个", "约十个", "十二个以上"
        if measure == "元" and rest[:1] not in ("", "钱", *_CLAUSE_END):
            return _UNREAD  # "三元一次方程": 元 is "unknown" there, not money
        return value
    ends_clause = after[:1] in ("", *_CLAUSE_END)
    if value is not None and ends_clause and run not in ("一", "两") and before.endswith(_VERBS):
        return value  # "一共是一百二十。"
    if len(run) == 1 and not after.startswith(_APPROXIMATE_AFTER):
        return _TEXT  # 一共, 十分, 三角形, 一个 ("a")
    return _UNREAD


def states_quantity(text: str) -> bool:
    """Whether `text` holds a numeral that states a quantity or that no rule here reads ("和三百块瓦",
    "十几个"), as opposed to numerals inside words only ("一共", "一样"): words after a value that
    hold one are a second value, not the value's unit."""
    return any(_quantity(text, match) != _TEXT for match in NUMERAL_RE.finditer(text))


def chinese_with_digits(sentence: str) -> str | None:
    """A Chinese sentence with the numerals that state a quantity as digits ("一共有十二个苹果。" ->
    "一共有 12 个苹果。"); None when it states none, or holds a numeral that cannot be read soundly."""
    if _KANA_OR_HANGUL_RE.search(sentence):
        return None
    out, cursor, read = [], 0, False
    for match in NUMERAL_RE.finditer(sentence):
        value = _quantity(sentence, match)
        if value == _UNREAD:
            return None
        if value == _TEXT:
            continue
        out += [sentence[cursor : match.start()], f" {value} "]
        cursor, read = match.end(), True
    return "".join(out) + sentence[cursor:] if read else None


def numerals_in(text: str) -> set[int]:
    """Every well-formed numeral of `text`, in any position (the generous reading of spelled.py)."""
    values = set()
    for match in NUMERAL_RE.finditer(text):
        counted = text[match.end() :].startswith(_MEASURES)  # "两个"
        if (value := numeral(match.group(0), counted)) is not None:
            values.add(value)
    return values


# A fraction as Chinese says it, the denominator first: 三分之二 (2/3), 负二分之一 (-1/2), 一又二分之一 (3/2).
_RUN = NUMERAL_RE.pattern
_FRACTION_RE = re.compile(rf"(负)?(?:({_RUN})又)?({_RUN})分之({_RUN})")


def fraction_value(text: str) -> Fraction | None:
    """The value of an answer that is one fraction in numerals ("三分之二", "负二分之一", "一又二分之一");
    None for anything else. Each part must be a well-formed numeral, so 百分之二十 (a percent: 百 is not
    how 100 is counted) and 十几分之一 are not read; a mixed number's fraction is below one."""
    match = _FRACTION_RE.fullmatch(text.strip().rstrip(".。"))
    if match is None:
        return None
    negative, whole_text, denominator_text, numerator_text = match.groups()
    denominator, numerator = numeral(denominator_text), numeral(numerator_text)
    whole = numeral(whole_text) if whole_text else 0
    if denominator is None or numerator is None or whole is None or denominator == 0:
        return None
    if whole_text and not 0 < numerator < denominator:
        return None  # "一又三分之四": not how a mixed number is said
    value = whole + Fraction(numerator, denominator)
    return -value if negative else value


_PERCENT_RE = re.compile(rf"(负)?百分之({_RUN})")


def percent_value(text: str) -> int | None:
    """The number of an answer that is one percent in numerals ("百分之二十" is 20 percent, "负百分之五",
    "百分之百"); None for anything else. The number must be a well-formed whole numeral: 百分之十几 and
    百分之十二点五 (a decimal, which no rule here reads) are not read."""
    match = _PERCENT_RE.fullmatch(text.strip().rstrip(".。"))
    if match is None:
        return None
    negative, run = match.groups()
    value = 100 if run == "百" else numeral(run)
    if value is None:
        return None
    return -value if negative else value
