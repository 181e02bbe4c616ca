"""Whole numbers in words (spelled.py): every number the languages' own counting writes is read back,
and what is no well-formed number, or states no value in its sentence, is not."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prose_answers import in_words

from assay.verifiers.math.chinese import fraction_value, percent_value
from assay.verifiers.math.spelled import spelled_numbers, spelled_value, with_digits


@given(
    st.integers(min_value=2, max_value=999),
    st.sampled_from(["en", "de", "fr", "es", "ru", "zh"]),
    st.randoms(),
)
def test_every_number_said_in_words_is_read_back(n: int, language: str, rng: random.Random) -> None:
    words = in_words(n, language, rng)
    if words in ("neuf", "sept", "once", "dos", "elf", "cent"):
        return  # also ordinary words ("new", "once", "of the", "elf", "cent"): never read alone
    assert spelled_value(words) == n, words


@pytest.mark.parametrize(
    "text",
    [
        "nineteen ninety",
        "two twenty",
        "twelve and three",
        "hundred",
        "ein",
        "un",
        "once",
        "a",
        "twenty twelve",
        "двенадцати",  # an oblique case ("из двенадцати"): no answer form
        "сто двадцати",
        "две тысяч",  # the scale word disagrees with its count
        "пять тысячи",
        "тысячи",  # "thousands (of)"
        "один",  # also "alone", "one of"
        "一百二",  # the colloquial 120: not how the counting writes a number
        "二三",  # "two or three"
        "千万",  # "by all means"
        "万一",  # "in case"
        "十两",  # "ten taels"
        "两",  # 2 only before a measure word or 百 / 千 / 万
        "一个",  # "a"
        "十二个苹果",  # a numeral, a measure word and more: not a bare answer
        "三角形",
    ],
)
def test_what_is_no_well_formed_number_is_not_read(text: str) -> None:
    assert spelled_value(text) is None


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("She has twelve apples left.", "She has 12 apples left."),
        ("So she has a hundred marbles.", "So she has 100 marbles."),
        ("En total hay ciento veinte manzanas.", "En total hay 120 manzanas."),
        ("The two numbers are equal.", None),  # after a determiner: it names things
        ("Twelve apples remain.", None),  # the subject, at the start
        ("She has 12 apples and three pears.", "She has 12 apples and 3 pears."),  # two numbers, not one
        ("Tiene una manzana.", None),  # an article alone
        ("It takes one hour.", None),  # English "one" is also a pronoun
        ("У неё осталось двенадцать яблок.", "У неё осталось 12 яблок."),
        ("Всего нужно две тысячи кирпичей.", "Всего нужно 2000 кирпичей."),
        ("Все три угла равны.", None),  # after a determiner
        ("Нужно в два раза больше.", None),  # a multiplier
        ("Осталось пять из двенадцати.", None),  # a number in an oblique case: the sentence isn't read
        ("所以一共需要二千五百块砖。", "所以一共需要 2500 块砖。"),  # 一共 "altogether" is no number
        ("他十分高兴，一共有十二个。", "他十分高兴，一共有 12 个。"),  # 十分 "very" neither
        ("一共是一百二十。", "一共是 120 。"),  # ending its clause after a verb
        ("第三个盒子里有十二个苹果。", "第三个盒子里有 12 个苹果。"),  # 第三 is an ordinal
        ("这三个苹果一共十二元。", None),  # after a determiner
        ("一共有十几个。", None),  # "ten-odd": a number no rule reads
        ("一共有十二个以上。", None),  # a bound after it
        ("答案是百分之二十。", None),  # a percent
        ("三元一次方程组有三个未知数。", None),  # 元 is "unknown" there, not money
        ("答えは十二個です。", None),  # Japanese: not read in a sentence
    ],
)
def test_with_digits_reads_only_the_words_that_state_a_value(sentence: str, expected: str | None) -> None:
    assert with_digits(sentence) == expected


@pytest.mark.parametrize(
    ("words", "n"),
    [
        ("двадцать одна тысяча", 21000),  # "тысяча" after a count ending in one
        ("две тысячи пятьсот", 2500),
        ("двенадцать тысяч", 12000),  # 11 to 14 take "тысяч"
        ("тысяча двести", 1200),
        ("сто один", 101),
        ("一万零五", 10005),
        ("两千", 2000),  # 两 before 千
        ("一十二", 12),  # the formal 一十
        ("十二个", 12),  # with its measure word
        ("两个", 2),
        ("零", 0),
    ],
)
def test_russian_and_chinese_numbers_are_read(words: str, n: int) -> None:
    assert spelled_value(words) == n


def test_a_prompt_s_numbers_in_words_are_all_found() -> None:
    assert spelled_numbers("Tom has twelve apples and Ann has twenty-two. How many?") == {12, 22}
    assert spelled_numbers("У Тома двенадцать яблок, у Анны двадцать два. 小明有十五个梨，又买了两个。") == {
        12,
        22,
        15,
        2,
    }


@given(st.integers(2, 999), st.integers(1, 999), st.booleans(), st.randoms())
def test_a_fraction_in_chinese_numerals_is_read_denominator_first(
    denominator: int, numerator: int, negative: bool, rng: random.Random
) -> None:
    said = "一" if numerator == 1 else in_words(numerator, "zh", rng)
    text = ("负" if negative else "") + f"{in_words(denominator, 'zh', rng)}分之{said}"
    assert fraction_value(text) == (-1 if negative else 1) * Fraction(numerator, denominator), text


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("一又二分之一", Fraction(3, 2)),
        ("两又三分之二。", None),  # 两 alone counts only before a measure word
        ("二又三分之二。", Fraction(8, 3)),
        ("一又三分之四", None),  # a mixed number's fraction is below one
        ("百分之二十", None),  # a percent: 百 alone is not how 100 is counted
        ("零分之一", None),
        ("三分之两", None),
        ("十几分之一", None),
        ("三分之", None),
        ("二分之一个", None),  # more than the fraction
        ("二分之一或三分之一", None),
    ],
)
def test_what_a_chinese_fraction_answer_is(text: str, value: Fraction | None) -> None:
    assert fraction_value(text) == value


@given(st.integers(2, 999), st.booleans(), st.randoms())
def test_a_percent_in_chinese_numerals_is_read(number: int, negative: bool, rng: random.Random) -> None:
    text = ("负" if negative else "") + f"百分之{in_words(number, 'zh', rng)}"
    assert percent_value(text) == (-1 if negative else 1) * number, text


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("百分之百", 100),
        ("百分之二十。", 20),
        ("百分之十几", None),  # "ten-odd percent"
        ("百分之十二点五", None),  # a decimal: not read
        ("百分之", None),
        ("百分之两", None),  # 两 alone counts only before a measure word
        ("三分之二", None),  # a fraction, not a percent
        ("百分之二十或三十", None),
    ],
)
def test_what_a_chinese_percent_answer_is(text: str, value: int | None) -> None:
    assert percent_value(text) == value
