"""Whole numbers in words (spelled.py): every number the languages' own counting writes is read back,
and what is no well-formed number, or states no value in its sentence, is not."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prose_answers import in_words

from assay.verifiers.math.spelled import spelled_numbers, spelled_value, with_digits


@given(st.integers(min_value=2, max_value=999), st.sampled_from(["en", "de", "fr", "es"]), st.randoms())
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
        ("She has 12 apples and three pears.", None),  # a sentence that writes digits keeps them alone
        ("Tiene una manzana.", None),  # an article alone
        ("It takes one hour.", None),  # English "one" is also a pronoun
    ],
)
def test_with_digits_reads_only_the_words_that_state_a_value(sentence: str, expected: str | None) -> None:
    assert with_digits(sentence) == expected


def test_a_prompt_s_numbers_in_words_are_all_found() -> None:
    assert spelled_numbers("Tom has twelve apples and Ann has twenty-two. How many?") == {12, 22}
