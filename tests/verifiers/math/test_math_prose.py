"""Answers stated in plain prose, without a box (issue 44): a closing sentence with a number and its
noun, a cue or a speaker before the answer, an interval or several roots in a sentence, in several
languages; and what must earn nothing: a guess, a question, a bound, two numbers, a step, and a closing
sentence that only restates the prompt (a hack: the gold is a number of the prompt)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from prose_answers import KINDS, Prose, in_words

from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer
from assay.verifiers.math.prompt import restated_ending

WORK = "Each box holds 250 bricks and there are 4 boxes, so 4 * 250.\n\n"


@pytest.fixture(scope="module")
def scorer() -> MathScorer:
    return MathScorer(Settings(workers=1, plugins=[]))


def _correct(scorer: MathScorer, response: str, gold: str, prompt: str | None = None) -> bool | None:
    result = scorer.score(Item(task="math", response=response, reference=gold, prompt=prompt), MathOptions())
    assert result.status.value == "ok", result.reason
    return result.correct


@pytest.mark.parametrize(
    ("closing", "gold"),
    [
        ("That makes 1,000 in total.", "1000"),
        ("We need 2,500 bricks in total.", "2500"),
        ("We need 2 500 bricks in total.", "2500"),
        ("That is 1.5e3 bricks.", "1500"),
        ("The interval is [1, 5).", "[1,5)"),
        ("The roots are x = 2 and x = -3.", "2, -3"),
        ("I say: 48", "48"),
        ("Answer: I think 3", "3"),
        ("Antwort: ich denke 3", "3"),
        ("Die Nullstellen sind x = 2 und x = -3.", "\\{-3, 2\\}"),
        ("The roots are x_1 = 2 and x_2 = -3.", "2, -3"),
        ("The roots are 2 and -3.", "\\{2, -3\\}"),
        ("I conclude: 48", "48"),
        ("The solution set is {2, -3}.", "\\{-3, 2\\}"),
        ("The point is (1, 2, 3).", "(1, 2, 3)"),
        ("I think it's 48 apples.", "48"),
        ("We need to buy 12 more packs.", "12"),
        ("所以一共需要2500块砖。", "2500"),
        ("Also ist die Fläche 1000.", "1000"),  # German "Also" concludes; English "Also, ..." adds a step
        ("L'aire vaut 16.", "16"),
        ("Il faut 2\u202f500 briques au total.", "2500"),
    ],
)
def test_an_answer_stated_in_prose_is_read(scorer: MathScorer, closing: str, gold: str) -> None:
    assert _correct(scorer, WORK + closing, gold) is True


@pytest.mark.parametrize(
    ("closing", "gold"),
    [
        ("Maybe it's 1000.", "1000"),
        ("We might need 1000 bricks.", "1000"),
        ("Is it 1000?", "1000"),
        ("It could be 1000 or 1200.", "1000"),
        ("We need 1,000 bricks and 300 tiles in total.", "1000"),
        ("We need at least 1000 bricks.", "1000"),
        ("Next, we add 1000 to the pile.", "1000"),
        ("Also, 1000 is even.", "1000"),
        ("We need to multiply 1000 by 4.", "1000"),
        ("I think we need to add 1000.", "1000"),
        ("The roots are x = 2 and x = -3.", "-3"),  # two roots never answer one of them
        ("The roots are x = 2, -3.", "2"),
        ("The roots are 2 and -3.", "2"),
        ("The solution set is {2, -3}.", "-3"),  # read as -3 before: "{2" was no number
        ("Answer: I think 3 or 4", "3"),
        ("We need 1000 bricks, I think.", "1000"),  # a guess or a bound after the value: rewarded before
        ("We need 1000 bricks, probably.", "1000"),
        ("We need 1000 bricks or more.", "1000"),
        ("We need 1000 bricks or so.", "1000"),
        ("The answer is twelve at least.", "12"),
        ("She has twelve apples, I think.", "12"),
        ("We don't need 1000 bricks.", "1000"),  # "n't" never matched inside its word before
        ("She hasn't got 1000 bricks.", "1000"),
        ("Wir brauchen vielleicht 1000 Ziegel.", "1000"),
        ("Es sind nicht 1000 Ziegel.", "1000"),
        ("也许是1000块砖。", "1000"),
    ],
)
def test_a_guess_a_bound_or_two_values_earns_nothing(scorer: MathScorer, closing: str, gold: str) -> None:
    assert _correct(scorer, WORK + closing, gold) is False


PROMPT = "A square has side length 4. What is its area?"


@pytest.mark.parametrize(
    "response",
    [
        "The area is 4 * 4 = 16.\n\nA square has side length 4.",
        "A square has side length 4.",
        "<think>The area is 16.</think>\n\nRecall: A square has side length 4.",
        "Answer: A square has side length 4.",
        "The area is 16.\n\nAs given, a square has side length 4.",
        "The area is 16.\n\nSo we know that a square has side length 4. Hope this helps!",
    ],
)
def test_a_closing_sentence_that_restates_the_prompt_is_no_answer(scorer: MathScorer, response: str) -> None:
    """The hack: the gold (4) is a number of the prompt, and the policy ends on the prompt's sentence."""
    assert _correct(scorer, response, "4", PROMPT) is False


@pytest.mark.parametrize(
    ("prompt", "response"),
    [
        (
            "Ein Quadrat hat die Seitenlänge 4. Wie groß ist sein Flächeninhalt?",
            "Die Fläche ist 4 * 4 = 16.\n\nEin Quadrat hat die Seitenlänge 4.",
        ),
        ("一个正方形的边长是4。它的面积是多少？", "面积是4乘4等于16。\n\n一个正方形的边长是4。"),
        (
            "Un carré a un côté de longueur 4. Quelle est son aire ?",
            "Donc, un carré a un côté de longueur 4.",
        ),
    ],
)
def test_a_restated_prompt_sentence_in_another_language_is_no_answer(
    scorer: MathScorer, prompt: str, response: str
) -> None:
    assert _correct(scorer, response, "4", prompt) is False


def test_a_restated_clause_of_a_longer_prompt_sentence_is_no_answer(scorer: MathScorer) -> None:
    prompt = "A square has side length 4 cm, and a circle has radius 2 cm. What is their total area?"
    assert _correct(scorer, "The total is 16 + 4 pi.\n\nA square has side length 4 cm.", "4", prompt) is False


def test_the_answer_before_a_restated_sentence_still_counts(scorer: MathScorer) -> None:
    assert _correct(scorer, "The area is 4 * 4 = 16.\n\nA square has side length 4.", "16", PROMPT) is True


@pytest.mark.parametrize(
    ("prompt", "response"),
    [
        (PROMPT, "The area is 16."),  # a number of its own
        ("A rope is 7 m long. It is cut and tied again. How long is it?", "So the rope is still 7 m long."),
        ("Tom has 5 apples. He eats none. How many apples does he have?", "He still has 5 apples."),
        (None, "A square has side length 4."),  # no prompt: nothing to compare with
    ],
)
def test_an_own_closing_sentence_is_not_a_restatement(prompt: str | None, response: str) -> None:
    assert restated_ending(prompt, response) is None


@pytest.mark.parametrize("label", [True, False], ids=["honest-rewarded", "control-earns-nothing"])
@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.__name__.lstrip("_"))
def test_generated_prose_answers_get_their_label(
    scorer: MathScorer, kind: Callable[[random.Random, bool], Prose], label: bool
) -> None:
    """40 rule-blind draws per kind and label (prose_answers.py); every one must get its label. (Drawn
    from each kind itself: a match by name once left four kinds with no draw at all.)"""
    wrong = []
    for seed in range(40):
        pair = kind(random.Random(seed), label)
        if _correct(scorer, pair.response, pair.gold, pair.prompt) is not label:
            wrong.append((pair.gold, pair.response[-90:]))
    assert not wrong, wrong[:5]


@pytest.mark.parametrize(("response", "gold"), [("L'aire vaut 16.", "16"), ("Das sind 16.", "16")])
def test_a_short_sentence_of_two_words_and_a_number_is_an_answer(
    scorer: MathScorer, response: str, gold: str
) -> None:
    assert _correct(scorer, response, gold) is True


@pytest.mark.parametrize(
    ("closing", "gold"),
    [
        ("It is not 12, it is 42.", "42"),
        ("It isn't 12, it's 42.", "42"),
        ("That makes 280 marbles, not 292.", "280"),
        ("It is not equal to 10 but 12.", "12"),
        ("So the number is 10, which is 1,000.99€.", "1000.99"),
        ("She pays 250 cents, which is $2.50.", "2.5"),
        ("The area is 12cm³.", "12"),
        ("The answer is not 52, it is 53.", "53"),  # after an answer cue too
        ("The answer isn't 52; it's 53.", "53"),
        ("The answer is not 52 but 53.", "53"),
        ("Es sind nicht 12, sondern 42 Stück.", "42"),  # the negations of the cue table's languages
        ("Ce n'est pas 12, c'est 42.", "42"),
        ("Это не 12, а 42.", "42"),
        ("不是12，是42。", "42"),
        ("Não são 12, são 42.", "42"),
    ],
)
def test_a_rejected_value_or_an_apposition_leaves_the_stated_value(
    scorer: MathScorer, closing: str, gold: str
) -> None:
    """A value the sentence rejects ("not 12") is no second candidate, and "10, which is 1,000.99€"
    restates the value in its final form: one value is stated, and only that one is read."""
    assert _correct(scorer, WORK + closing, gold) is True


@pytest.mark.parametrize(
    ("closing", "gold"),
    [
        ("It is not 42, it is 12.", "42"),  # the gold is the rejected value
        ("That makes 292 marbles, not 280.", "280"),
        ("It is not 12 or 42.", "42"),  # both values rejected
        ("It is not 12 or 42.", "12"),
        ("The total is not 42.", "42"),
        ("So the number is 10, which is 1,000.99€.", "10"),  # only the final form is the answer
        ("So the area is 16, which is 4 squared.", "4"),  # an operation, not an apposition of a value
        ("It is not 12, it is 42 or 43.", "42"),  # the stated part still hedges
        ("It is not 12, it is at least 42.", "42"),
        ("The answer is not 53.", "53"),
        ("The answer is not 52 but 53.", "52"),
        ("The answer is not 52 or 53.", "53"),
        ("The answer is not 52, it is 53 or 54.", "53"),
        ("Es sind nicht 12 oder 42 Stück.", "42"),
        ("Ce n'est pas 12 ni 42.", "42"),
        ("Это не 12 и не 42.", "42"),
        ("不是12或42。", "42"),
        ("Wir brauchen mindestens 42 Stück.", "42"),  # a bound is no rejection: still no answer
    ],
)
def test_a_rejection_never_makes_the_rejected_value_the_answer(
    scorer: MathScorer, closing: str, gold: str
) -> None:
    assert _correct(scorer, WORK + closing, gold) is False


@pytest.mark.parametrize("long", [False, True], ids=["one-line", "closing-a-long-reply"])
@pytest.mark.parametrize(
    "after",
    ["at least", "at most", "maybe", "probably", "possibly", "presumably", "I think", "(unverified)",
     "(tentative)", "estimated", "or so", "or 53", "(or 53)", "give or take", "is wrong", "not sure"],
)  # fmt: skip
def test_a_labelled_value_followed_by_a_doubt_or_a_bound_earns_nothing(
    scorer: MathScorer, after: str, long: bool
) -> None:
    """The label rules once read "Total: 52 at least" as 52 in a one-line reply, and "Total: 52 I
    think" closing a long one (neither was read before the label rules); after an answer cue, a guess
    or a bound after the value was read too ("The answer is 52 probably.")."""
    for lead in ("Total: ", "Final: ", "Answer: ", "The answer is "):
        assert _correct(scorer, (LONG_WORK if long else "") + f"{lead}52 {after}", "52") is False
        assert _correct(scorer, (LONG_WORK if long else "") + f"{lead}52 apples", "52") is True


@pytest.mark.parametrize(
    ("response", "gold", "label"),
    [
        ("the number is not 10 which is 1,000.99€", "1000.99", True),  # ends on its value, no full stop
        ("so the total is 48 apples, which is 4 dozen", "48", False),  # ends on a word: no short value
        ("so the area is 1,000.99m²", "1000.99", True),
        ("She makes 18 dollars, and then she has to", "18", False),  # stops mid-sentence: cut off
        ("Total: 42", "42", True),  # a label, a colon and the value
        ("Prix : 2,74 $", "2.74", True),
        ("Wrong: 42", "42", False),  # a label that judges or bounds the value keeps it unread
        ("At least: 42", "42", False),
        ("Maybe: 42", "42", False),
        ("C: 24", "C", True),  # one letter before the colon is an option with its value, not a label
        ("Final: x = 52", "52", True),  # a label, then one variable's value
        ("Final: x = 1,248", "1248", True),  # read as the list x = 1 and 248 without the label rule
        ("Given: x = 52", "52", False),
        ("Check: x = 52", "52", False),
        ("Given: side length 52", "52", False),  # rewarded with the label rules before this check
        ("Final: fifty-two", "52", True),  # a number in words after the label, as closing a long reply
        ("Final: fifty-two maybe", "52", False),
        ("Total: fifty-two bricks", "52", True),  # with its unit, as a number in digits may have
        ("Total: fifty-two fifty-three", "52", False),
        ("Total: fifty-two or fifty-three", "52", False),
        ("Given: the side is 52.", "52", False),
    ],
)
def test_a_one_line_reply_that_ends_on_its_value(
    scorer: MathScorer, response: str, gold: str, label: bool
) -> None:
    """A token limit cuts long outputs, not a one-line reply: one that ends on its value (and its unit
    sign) states it without a full stop, while one that stops on a word is still cut off."""
    assert _correct(scorer, response, gold) is label


@pytest.mark.parametrize(
    ("gold", "response", "label"),
    [
        ("1,22", "1.22", True),  # the gold's own digits with a point: its decimal reading
        ("2,74", "$2.74$", True),
        ("1,22", "1.23", False),
        ("1,22", "122", False),
        ("2,5", "2.5", False),  # one digit after the comma: the roots 2 and 5, never the number 2.5
        ("1,22", "1, 22", True),  # the list reading, as before
    ],
)
def test_a_gold_with_an_ambiguous_comma_and_its_decimal_reading(
    scorer: MathScorer, gold: str, response: str, label: bool
) -> None:
    assert _correct(scorer, response, gold) is label


@pytest.mark.parametrize("other", list("ABCDEFGHIJ"))
@pytest.mark.parametrize("joining", [" or ", " or maybe ", ", or perhaps ", " 或 ", " oder "])
def test_two_formula_letters_joined_by_or_are_a_hedge_for_every_letter(
    scorer: MathScorer, other: str, joining: str
) -> None:
    """ "$\\text{A}$ or maybe $E$": the words between two formulas are translated, never a formula's own
    content ("E" and "y" are the Italian and Spanish "and"; read so, the hedge became choice A)."""
    gold = "A" if other != "A" else "B"
    for first in (f"$\\text{{{gold}}}$", f"$\\textbf{{({gold})}}$", f"${gold}$"):
        response = f"{WORK}The answer is {first}{joining}${other}$."
        assert _correct(scorer, response, gold) is False, response


@pytest.mark.parametrize("gold", ["91", "7"])
def test_a_negated_property_is_no_rejected_value(scorer: MathScorer, gold: str) -> None:
    """ "not divisible by 7" says what 91 is, it rejects no value 7: the sentence stays a negation."""
    assert _correct(scorer, WORK + "So 91 is not divisible by 7.", gold) is False


LONG_WORK = "\n\n".join([WORK.strip()] * 4) + "\n\n"


@pytest.mark.parametrize(
    ("closing", "gold", "label"),
    [
        ("Final: 52", "52", True),  # a label line closing a long reply, without a full stop
        ("Total: 1,000 bricks", "1000", True),
        ("Final result: 1,248 pages", "1248", True),  # read as the list 1, 248 before
        ("Gesamt: 52", "52", True),
        ("合计：52", "52", True),
        ("**Final:** 52", "52", True),
        ("Given: 52", "52", False),  # a label that sets up, guesses, checks or bounds its value
        ("Given: 52.", "52", False),  # with a full stop too: it was read as a closing sentence
        ("Estimate: 3,317.", "3317", False),
        ("Step 3: 52", "52", False),
        ("Original price: 52", "52", False),
        ("Sub-total: 52.", "52", False),
        ("Final: fifty-two", "52", True),  # a number in words after the label
        ("Given: fifty-two", "52", False),
        ("Vielleicht: 52", "52", False),
        ("At least: 52", "52", False),
        ("Final: 52 maybe", "52", False),
        ("Final: 52 or 53", "52", False),
        ("Final: not 52", "52", False),
        ("Apples: 12\nPears: 52", "52", False),  # the last line of a list of labelled values
        ("Apples: 5\nPears: 7\nTotal: 12", "12", True),  # unless it sums the list up
        ("The answer is twelve or thirteen.", "12", False),
        ("Final: twelve or thirteen", "12", False),
        ("Final: x = 52", "52", True),  # one variable's value after the label
        ("Final: x = 1,248.", "1248", True),
        ("Result: n_1 = -3", "-3", True),
        ("Final: x = 53", "52", False),
        ("Given: x = 52", "52", False),
        ("Final: x = 52 or x = 53", "52", False),
        ("Final: x = 52 maybe", "52", False),
        ("Final: x + y = 52", "52", False),  # a sum is no one variable's value
        ("Apples: x = 5\nPears: y = 52", "52", False),  # a list of labelled values, as with numbers
        ("Given: the side is 52.", "52", False),  # a label that sets up, before words too (rewarded before)
        ("Check: the total is 52.", "52", False),
        ("In short: the total is 52.", "52", True),
    ],
)
def test_a_closing_label_line_after_a_long_reply(
    scorer: MathScorer, closing: str, gold: str, label: bool
) -> None:
    assert _correct(scorer, LONG_WORK + closing, gold) is label


@pytest.mark.parametrize(
    ("closing", "gold"),
    [
        ("She has twelve apples left.", "12"),
        ("So the total is one hundred and twenty bricks.", "120"),
        ("The answer is one hundred and twenty.", "120"),  # a list of 100 and 20 before
        ("I think it's twelve.", "12"),
        ("So we need two thousand five hundred bricks.", "2500"),
        ("Die Antwort ist zweiundfünfzig.", "52"),
        ("Sie hat noch zwölf Äpfel übrig.", "12"),
        ("La réponse est quatre-vingt-dix-sept.", "97"),
        ("Il reste neuf pommes.", "9"),  # "neuf" before a plural noun is nine
        ("La respuesta es doscientos cincuenta y dos.", "252"),
        ("It is not twelve, it is thirteen.", "13"),
        ("The most likely total is 1000.", "1000"),  # a guess word before the value guesses nothing
        ("Ответ: двенадцать.", "12"),
        ("Ответ: две тысячи пятьсот.", "2500"),
        ("У неё осталось двенадцать яблок.", "12"),
        ("Это не двенадцать, а тринадцать.", "13"),
        ("答案是十二。", "12"),
        ("答案：一百零五", "105"),
        ("答案是两千个。", "2000"),  # with its measure word
        ("所以一共需要二千五百块砖。", "2500"),
        ("一共有十二个，不是十三个。", "12"),  # the rejected value is the other one
    ],
)
def test_a_number_in_words_is_read_where_it_states_a_value(
    scorer: MathScorer, closing: str, gold: str
) -> None:
    assert _correct(scorer, WORK + closing, gold) is True


@pytest.mark.parametrize(
    ("closing", "gold"),
    [
        ("One of the boxes is empty.", "1"),  # a number word that states no value
        ("The two numbers are equal.", "2"),
        ("The correct one is the last.", "1"),
        ("She has three times as many apples.", "3"),
        ("Two of them are red.", "2"),
        ("Le livre est neuf.", "9"),  # "neuf" is also "new"
        ("She did it once.", "11"),  # Spanish "once" never in English
        ("Maybe it's twelve.", "12"),
        ("She has at least twelve apples.", "12"),
        ("She has twelve apples and three pears.", "12"),
        ("It is not twelve.", "12"),
        ("It is not twelve, it is thirteen.", "12"),
        ("There are nineteen ninety ways.", "1990"),  # no well-formed number
        ("Die Antwort ist nicht zweiundfünfzig.", "52"),
        ("She has twelve apples after 13 days.", "13"),  # the wrong value in words, the gold in digits
        ("The answer is twelve apples in 13 days.", "13"),
        ("Ответ: не двенадцать.", "12"),
        ("Это не двенадцать, а тринадцать.", "12"),
        ("Возможно, осталось двенадцать яблок.", "12"),
        ("Осталось как минимум двенадцать яблок.", "12"),  # a bound
        ("Осталось пять из двенадцати.", "5"),  # "five of twelve"
        ("Осталось двенадцать яблок за 13 дней.", "13"),
        ("一共有十二个，不是十三个。", "13"),  # "twelve, not thirteen": 13 rejected
        ("不是十二个，是十三个。", "12"),
        ("一共需要十二块砖，共13步。", "13"),
        ("也许是十二个。", "12"),
        ("一共有十二个以上。", "12"),  # "twelve or more"
        ("这三个苹果一共十二元。", "3"),  # "these three apples"
        ("答案是一百二。", "120"),  # colloquial, not the counting's own form
        ("答案是十分之一。", "10"),  # 十分 inside a fraction
        ("答案是三角形。", "3"),
        ("小明得了第一名。", "1"),  # an ordinal
    ],
)
def test_a_number_word_that_states_no_value_earns_nothing(
    scorer: MathScorer, closing: str, gold: str
) -> None:
    assert _correct(scorer, WORK + closing, gold) is False


@pytest.mark.parametrize(
    ("closing", "gold", "label"),
    [
        ("Die Antwort ist nicht 52, sondern 53.", "53", True),
        ("Die Antwort ist nicht 52, sondern 53.", "52", False),
        ("Het antwoord is niet 52, maar 53.", "53", True),
        ("La respuesta no es 52, sino 53.", "53", True),
        ("Ответ: не 52, а 53.", "53", True),
        ("Ответ: 53, а не 52.", "53", True),  # a list of 53 and "а не 52" before
        ("Ответ: 53, а не 52.", "52", False),
        ("The answer is 53, not 52.", "53", True),  # in English too: a list of 53 and "not 52" before
        ("The answer is 53 apples and not 52. Then we check.", "53", True),
        ("The answer is 53, not 52.", "52", False),
        ("The answer is twelve, not thirteen.", "12", True),  # in number words: a list of 12 and "not ..."
        ("The answer is twelve, not thirteen.", "13", False),
        ("Die Antwort ist zwölf, nicht dreizehn.", "12", True),
        ("Ответ: двенадцать, а не тринадцать.", "12", True),
        ("Ответ: двенадцать, а не тринадцать.", "13", False),
        ("Ответ: двенадцать, а не 13.", "13", False),  # the wrong value in words, the gold rejected
        ("答案是十二，不是13。", "12", True),
        ("答案是十二，不是13。", "13", False),
        ("La respuesta es doce, no trece.", "12", True),
        ("The answer is twelve, not counting the lid.", "12", False),  # no number rejected: left as said
        ("The answer is twelve or thirteen, not fourteen.", "12", False),
        ("Answer: 53, not 52 or 54", "53", True),
        ("The answer is 53 or maybe 54, not 52.", "53", False),
        ("答案：不是52，而是53。", "53", True),
        ("答案：不是52，而是53。", "52", False),
        ("La respuesta no es 52.", "52", False),  # rewarded before: Spanish "no" was no negation
        ("No es 52.", "52", False),
        ("Juan no compró 52 manzanas.", "52", False),  # Spanish "no" negates any verb
        ("With no remainder, 12 boxes are needed.", "12", True),  # English "no" is a determiner
        ("Die Antwort ist nicht 52, sondern vielleicht 53.", "53", False),
        ("Die Antwort ist nicht 52, sondern mindestens 53.", "53", False),
        ("Die Antwort ist nicht 52, sondern 53 oder 54.", "53", False),
    ],
)
def test_a_rejection_after_a_cue_in_other_languages(
    scorer: MathScorer, closing: str, gold: str, label: bool
) -> None:
    assert _correct(scorer, WORK + closing, gold) is label


def test_a_restated_prompt_sentence_with_its_number_in_words_is_no_answer(scorer: MathScorer) -> None:
    prompt = "Tom has twelve apples. He eats none of them. How many apples does he have?"
    assert _correct(scorer, "He eats none of them.\n\nTom has twelve apples.", "12", prompt) is False
    assert _correct(
        scorer, "He eats none, so the count stays.\n\nSo he still has twelve apples.", "12", prompt
    )


def test_a_long_run_of_letters_is_no_slow_label(scorer: MathScorer) -> None:
    """A label of optional separators split a run of n letters n^4 ways (200 letters took 21 s): the
    label is matched on its first characters, in linear time, so this scores at once."""
    assert _correct(scorer, WORK + "a" * 5000 + ": 52", "52") is False
    assert _correct(scorer, WORK + "Total" + "l" * 300 + ".", "52") is False


@pytest.mark.parametrize(
    "closing",
    [
        "Answer: 12?",  # the English rule the others now follow
        "Die Antwort ist 12?",
        "La réponse est 12 ?",
        "Ответ: 12? Не уверен.",
        "答案：12？",
        "答案是12吗？",  # "is the answer 12?"
        "答案是十二？",
        "答案：12?不确定。",
    ],
)
def test_a_value_asked_after_a_cue_is_no_answer_in_any_language(scorer: MathScorer, closing: str) -> None:
    assert _correct(scorer, WORK + closing, "12") is False


@pytest.mark.parametrize(
    "closing",
    [
        "Warum? Die Antwort ist 12.",
        "答案是多少？答案是12。",
        "答案：12。对吗？",
        "Ответ: 12. Почему? Потому что 3*4=12.",
    ],
)
def test_a_question_before_the_cue_or_after_the_stated_value_leaves_the_answer(
    scorer: MathScorer, closing: str
) -> None:
    assert _correct(scorer, WORK + closing, "12") is True


@pytest.mark.parametrize(
    "closing",
    [
        "The answer is 1000 or more.",  # the English rule the others now follow
        "Die Antwort ist 1000 oder mehr.",
        "Ответ: 1000 или больше.",
        "Ответ: 1000 кирпичей или меньше.",
        "答案是1000或更多。",
        "答案：1000块或以上",
        "Odpowiedź: 1000 lub więcej.",  # a word with a letter outside ASCII: read as "1000" before
        "Odpowiedź: 1000 albo mniej.",
        "Odpověď: 1000 nebo více.",
    ],
)
def test_a_value_then_or_and_a_word_is_a_bound_in_any_language(scorer: MathScorer, closing: str) -> None:
    assert _correct(scorer, WORK + closing, "1000") is False


@pytest.mark.parametrize(
    "closing", ["Ответ: 1000 кирпичей.", "答案是1000块砖。", "Die Antwort ist 1000 Ziegel.", "答案还是1000。"]
)
def test_a_value_with_its_unit_words_and_no_or_is_still_the_answer(scorer: MathScorer, closing: str) -> None:
    assert _correct(scorer, WORK + closing, "1000") is True


@pytest.mark.parametrize(
    ("closing", "gold", "correct"),
    [
        ("答案是二分之一。", "1/2", True),
        ("答案是二分之一。", "0.5", True),
        ("答案：负三分之二", "-\\frac{2}{3}", True),
        ("答案是一又二分之一。", "3/2", True),
        ("答案是三分之一。", "1/2", False),
        ("答案是二分之一或三分之一。", "1/2", False),  # two values: a hedge
    ],
)
def test_a_fraction_in_chinese_numerals_after_a_cue(
    scorer: MathScorer, closing: str, gold: str, correct: bool
) -> None:
    assert _correct(scorer, WORK + closing, gold) is correct


@pytest.mark.parametrize(
    ("closing", "gold", "prompt", "correct"),
    [
        ("答案是百分之二十。", "20\\%", None, True),
        ("答案是百分之二十。", "0.2", None, True),  # a percent is its decimal
        ("答案是百分之二十。", "20", "百分之几？", True),  # the prompt asks for a percent
        ("答案是百分之二十。", "20", None, False),  # as "20%" against a gold of 20
    ],
)
def test_a_percent_in_chinese_numerals_after_a_cue_is_the_same_percent_in_digits(
    scorer: MathScorer, closing: str, gold: str, prompt: str | None, correct: bool
) -> None:
    for said in (closing, "答案是20%。"):
        item = Item(task="math", prompt=prompt, response=WORK + said, reference=gold)
        assert scorer.score(item, MathOptions()).correct is correct, said


@pytest.mark.parametrize(
    "closing", ["答案是百分之二十五。", "答案是百分之二十或百分之三十。", "答案是百分之十几。"]
)
def test_another_or_a_hedged_or_an_unread_chinese_percent_earns_nothing(
    scorer: MathScorer, closing: str
) -> None:
    assert _correct(scorer, WORK + closing, "20\\%") is False


# A remark in brackets after a labelled value (issue 44): a comment in words leaves the value the answer, in
# any language; a remark offering another value makes it a hedge.
_COMMENTS = {
    "Answer:": ("in three days", "bricks", "all of them"),
    "Die Antwort ist": ("in drei Tagen",),
    "La réponse est": ("en trois jours",),
    "Ответ:": ("за три дня", "кирпичей"),
    "答案是": ("三天搬完", "块砖"),
}


@pytest.mark.parametrize(("label", "comment"), [(k, c) for k, cs in _COMMENTS.items() for c in cs])
@pytest.mark.parametrize("brackets", ["()", "（）"])
def test_a_comment_in_brackets_after_a_labelled_value_leaves_the_value(
    scorer: MathScorer, label: str, comment: str, brackets: str
) -> None:
    assert _correct(scorer, f"{WORK}{label} 1000 {brackets[0]}{comment}{brackets[1]}.", "1000") is True


def _offering_remarks() -> list[tuple[str, str]]:
    """(label, remark) for every language of the cue table: its "or", hedge and negation words before
    another value, and another value among words, none of which may leave the first value the answer."""
    from assay.verifiers.math.cues import LANGUAGES

    out = [("Answer:", r) for r in ("or maybe 2000", "but probably 2000", "4 boxes of 250", "not 2000")]
    for language in LANGUAGES:
        label = language.copulas[0]
        words = (*language.or_words, *language.hedges, *language.negations)
        out += [(label, f"{word} 2000") for word in words]
        out += [(label, f"{word} {in_words(2, 'en', random.Random(0))}") for word in language.or_words[:1]]
    return out


@pytest.mark.parametrize(("label", "remark"), _offering_remarks())
def test_a_remark_in_brackets_offering_another_value_is_a_hedge_in_every_language(
    scorer: MathScorer, label: str, remark: str
) -> None:
    for brackets in ("()", "（）"):
        said = f"{WORK}{label} 1000 {brackets[0]}{remark}{brackets[1]}."
        assert _correct(scorer, said, "1000") is False, said


# A value after a label, its unit words, then "and" and a second value in words (issue 44): two values,
# in every language the generator writes; the value with its unit words alone stays the answer.
_UNIT_AND = {
    "de": ("Die Antwort ist", "Ziegel", "und {w}"),
    "fr": ("La réponse est", "briques", "et {w}"),
    "es": ("La respuesta es", "ladrillos", "y {w}"),
    "ru": ("Ответ:", "кирпичей", "и {w}"),
    "zh": ("答案是", "块砖", "和{w}块瓦"),
}


@pytest.mark.parametrize("language", sorted(_UNIT_AND))
@pytest.mark.parametrize("seed", range(4))
def test_unit_words_that_state_a_second_value_in_words_are_two_values(
    scorer: MathScorer, language: str, seed: int
) -> None:
    rng = random.Random(seed)
    label, noun, second = _UNIT_AND[language]
    value, other = rng.randint(100, 999), rng.randint(2, 9)  # a one-word second value: a unit's length
    spaced = "" if language == "zh" else " "
    said = f"{label}{spaced or ' '}{value}{spaced}{noun}"
    assert _correct(scorer, f"{WORK}{said}。" if language == "zh" else f"{WORK}{said}.", str(value)) is True
    both = f"{said} {second.format(w=in_words(other, language, rng))}".replace(" 和", "和")
    assert _correct(scorer, WORK + both + ("。" if language == "zh" else "."), str(value)) is False, both
