"""Multiple choice in prose and via the prompt's options, percents, and responses that only restate the
question (issues 28 and 30). Every row pins a kind of answer a policy writes."""

from __future__ import annotations

import pytest

from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer
from assay.verifiers.math.choices import prompt_options, prose_choice, read_letters
from assay.verifiers.math.prompt import asks_for_percent, restates_prompt

APPLES = "Tom has 5 apples. He buys 3 more apples and then eats 3 of them. How many apples does Tom have now?"
OPTIONS = "Question: What is 2+2?\n(A) 3\n(B) 4\n(C) 5\n(D) 6"


@pytest.fixture(scope="module")
def scorer() -> MathScorer:
    return MathScorer(Settings(workers=1, plugins=[]))


def _correct(scorer: MathScorer, gold: str, response: str, prompt: str | None = None) -> bool | None:
    item = Item(task="math", response=response, reference=gold, prompt=prompt)
    result = scorer.score(item, MathOptions())
    assert result.status.value == "ok", result.reason
    return result.correct


# A short answer that opens with "I" or "A" is a sentence, not an option letter (issue 30).
@pytest.mark.parametrize(
    ("gold", "response", "correct"),
    [
        ("48", "I think it is 48.", True),
        ("48", "I guess 48.", True),
        ("48", "A total of 48.", True),
        ("3", "I'd say 3.", True),
        ("A", "A total of 48.", False),
        ("I", "I think it is 48.", False),
        ("49", "I think it is 48.", False),
        ("48", "I think it is 48 or 49.", False),
        ("A", "So A is correct.", True),
        ("A", "I think A.", True),
        ("B", "I think A.", False),
    ],
)
def test_letter_like_words(scorer: MathScorer, gold: str, response: str, correct: bool) -> None:
    assert _correct(scorer, gold, response) is correct


@pytest.mark.parametrize(
    ("gold", "response", "correct"),
    [
        ("C", "答案: C", True),
        ("C", "答案是 C。", True),
        ("C", "(C) is correct", True),
        ("C", "it can't be A or B, so C", True),
        ("B", "it can't be A or B, so C", False),
        ("C", "A is wrong and B is wrong, therefore C.", True),
        ("C", "Not A, not B: I pick C.", True),
        ("C", "The correct one is (C).", True),
        ("C", "It is either B or C.", False),
        ("C", "We pick B or C.", False),
        ("C", "The answer is A or C.", False),
        ("C", "Die richtige Antwort ist C.", True),
        ("C", "C is not correct.", False),
    ],
)
def test_choices_in_prose(scorer: MathScorer, gold: str, response: str, correct: bool) -> None:
    assert _correct(scorer, gold, response) is correct


# A letter after an answer marker that the rest of its clause judges, bracketed, or before CJK text
# (material of evalscope's and lm-eval's multiple-choice tests, issue 30).
@pytest.mark.parametrize(
    ("gold", "response", "correct"),
    [
        ("B", "reasoning\nANSWER: [B]", True),
        ("B", "ANSWER: B is the correct choice", True),
        ("C", "I first said ANSWER: A but ANSWER: C is correct.", True),
        ("B", "ANSWER: B - energy is conserved", True),
        ("B", "ANSWER: B - the other options fail the check", True),
        ("B", "ANSWER: B is correct, D is a distractor", True),
        ("B", "答案：B是正确的，D是干扰项", True),
        ("B", "答案：D是干扰项，B是正确的", True),
        ("D", "ANSWER: B is correct, D is a distractor", False),
        ("D", "答案：B是正确的，D是干扰项", False),
        ("B", "ANSWER: B is wrong, D is correct", False),
        ("B", "ANSWER: B or C is correct", False),
        ("B", "ANSWER: [B] or [C]", False),
        ("A", "ANSWER: [B]", False),
        ("B", "ANSWER: $B - x$", False),  # a difference, not a justification
        ("C", "Therefore, the correct option is C: 24.", True),  # the option with its value
        ("B", "Therefore, the correct option is C: 24.", False),
        ("C", "La respuesta correcta es la C.", True),  # an article before the letter
        ("B", "La respuesta correcta es la C.", False),
    ],
)
def test_judged_and_bracketed_letters(scorer: MathScorer, gold: str, response: str, correct: bool) -> None:
    assert _correct(scorer, gold, response) is correct


def test_read_letters_tells_words_from_letters() -> None:
    assert read_letters("A total of 48") is None
    assert read_letters("I'd say 3") is None
    assert read_letters("(B) 24") == ("B", "24")
    assert read_letters("B and C") == ["B", "C"]
    assert read_letters("A = 2") is None
    assert read_letters("[C]") == ("C", "")
    assert read_letters("B - x") is None
    assert read_letters("B - energy is conserved") == ("B", "- energy is conserved")


def test_prose_choice_drops_ruled_out_letters() -> None:
    assert prose_choice("Neither A nor B works, so the answer must be D.") == ["D"]
    assert prose_choice("Both B and C satisfy it.") == ["B", "C"]


@pytest.mark.parametrize(
    ("gold", "response", "correct"),
    [
        ("4", "The answer is (B).", True),
        ("4", "The answer is (C).", False),
        ("B", "The answer is 4.", True),
        ("B", "The answer is 5.", False),
    ],
)
def test_the_prompts_options_link_letters_and_values(
    scorer: MathScorer, gold: str, response: str, correct: bool
) -> None:
    assert _correct(scorer, gold, response, OPTIONS) is correct


def test_prompt_options_need_a_run_from_a() -> None:
    assert prompt_options(OPTIONS) == {"A": "3", "B": "4", "C": "5", "D": "6"}
    assert prompt_options("Point B. is on the line. What is AB?") == {}


# A percent is its decimal; the bare number of percent only answers a question that asks for a percent.
@pytest.mark.parametrize(
    ("gold", "response", "prompt", "correct"),
    [
        ("4", "\\boxed{4\\%}", None, False),
        ("0.5", "\\boxed{50\\%}", None, True),
        ("\\frac{1}{2}", "\\boxed{50\\%}", None, True),
        ("0.05", "\\boxed{50\\%}", None, False),
        (
            "25",
            "\\boxed{25\\%}",
            "A shirt costs $20 and is sold for $15. What percent discount is that?",
            True,
        ),
        (
            "5",
            "\\boxed{5\\%}",
            "A shirt costs $20 and has a 25% discount. How many dollars is the discount?",
            False,
        ),
        # A LaTeX-escaped percent in a concluding sentence is still a percent (it was dropped there).
        ("12", "So the result is 12\\%.", None, False),
        ("0.12", "So the result is 12\\%.", None, True),
        ("12", "So the result is 12 percent.", "What percent of the class passed?", True),
        ("50\\%", "\\boxed{0.5}", None, True),
        ("50\\%", "\\boxed{50}", None, True),
    ],
)
def test_percent(scorer: MathScorer, gold: str, response: str, prompt: str | None, correct: bool) -> None:
    assert _correct(scorer, gold, response, prompt) is correct


def test_asks_for_percent() -> None:
    assert asks_for_percent("What percentage of the class passed?")
    assert asks_for_percent("Give the growth rate (in %).")
    assert not asks_for_percent("A 20 percent tip is added. How much is paid?")
    assert not asks_for_percent(None)


# Restatement attacks (issue 28): the question copied back, ending on a number from it.
RESTATEMENTS = [
    f"{APPLES} The answer is 5.",
    f"{APPLES}\n\nSo the answer is $\\boxed{{5}}$.",
    "Tom has 5 apples. He buys 3 more apples and then eats 3 of them. Therefore the final answer is 5.",
    f"<think>\n{APPLES}\n</think>\n\n\\boxed{{5}}",
    "Tom has 5 apples. How many apples does Tom have now? 答案是 5。",
]
# Honest answers whose answer is in the question: working of their own, however short.
HONEST = [
    "Tom starts with 5 apples. After buying 3 he has 5 + 3 = 8. After eating 3 he has 8 - 3 = 5. \\boxed{5}",
    "He buys 3 and eats 3, which cancel out, so he ends with as many as he started with: \\boxed{5}.",
    "\\boxed{5}",
    "5",
    f"{APPLES}\n\nBuying 3 and eating 3 leaves the count unchanged, so Tom still has $\\boxed{{5}}$ apples.",
    "The 3 he buys and the 3 he eats cancel, so the answer is 5.",
]


@pytest.mark.parametrize("response", RESTATEMENTS)
def test_a_restated_question_is_not_rewarded(scorer: MathScorer, response: str) -> None:
    item = Item(task="math", response=response, reference="5", prompt=APPLES)
    result = scorer.score(item, MathOptions())
    assert result.correct is False and (result.details or {}).get("rule") == "restates-prompt"


@pytest.mark.parametrize("response", HONEST)
def test_an_honest_answer_found_in_the_question_is_rewarded(scorer: MathScorer, response: str) -> None:
    assert _correct(scorer, "5", response, APPLES) is True


def test_without_a_prompt_nothing_is_a_restatement() -> None:
    assert not restates_prompt(None, f"{APPLES} The answer is 5.", "5")
    assert not restates_prompt(APPLES, f"{APPLES} The answer is 8.", "8")  # 8 is not in the question


# Decimal commas: unambiguous forms always; "1,22" only where the prompt or the answer's language says so.
@pytest.mark.parametrize(
    ("gold", "response", "prompt", "correct"),
    [
        ("1000.99", "1000,99", None, True),
        ("0,111", "0.111", None, True),
        ("2.74", "Answer: 2,74 $", None, True),
        ("2.74", "Answer: 2,75 $", None, False),
        ("1000.99", "The answer is 1,000.99€.", None, True),
        ("3.5", "Die Antwort ist 3,5.", None, True),
        ("3.6", "Die Antwort ist 3,5.", None, False),
        ("1.22", "1,22", "Un objet pèse 2,5 kg. Il perd 1,28 kg. Combien pèse-t-il ?", True),
        ("1.23", "1,22", "Un objet pèse 2,5 kg. Il perd 1,28 kg. Combien pèse-t-il ?", False),
        ("1.22", "1,22", None, False),  # no prompt, no language: the sound reading is a list
        ("1.22", "1,22", "What is 0.61 times 2?", False),
        ("1,000", "1000", None, True),
        ("(1,2)", "\\boxed{(1,2)}", "Un point à 1,5 cm ?", True),
    ],
)
def test_decimal_commas(
    scorer: MathScorer, gold: str, response: str, prompt: str | None, correct: bool
) -> None:
    assert _correct(scorer, gold, response, prompt) is correct


def test_the_comma_reading_is_said_in_details(scorer: MathScorer) -> None:
    result = scorer.score(Item(task="math", response="1,22", reference="1.22"), MathOptions())
    assert (result.details or {})["decimal_comma"].startswith("list")
    result = scorer.score(Item(task="math", response="Die Antwort ist 3,5.", reference="3.5"), MathOptions())
    assert "German" in (result.details or {})["decimal_comma"]


# An explicit correction after a box replaces it; a check after an unboxed answer is not the answer.
@pytest.mark.parametrize(
    ("gold", "response", "correct"),
    [
        ("44", "We get 42.\n\nSo $\\boxed{42}$.\n\nCorrecting, the answer is 44.", True),
        ("42", "We get 42.\n\nSo $\\boxed{42}$.\n\nCorrecting, the answer is 44.", False),
        ("44", "The answer is 42. Correcting, it is 44.", True),
        ("42", "The answer is 42. Correction: it is 44.", False),
        (
            "\\frac{3}{4}x+2",
            "Therefore, the cost is $\\frac{3}{4}x + 2$.\n\nCheck: with $x = 4$ this gives 5.",
            True,
        ),
        ("5", "Therefore, the cost is $\\frac{3}{4}x + 2$.\n\nSanity check: for x = 4 the cost is 5.", False),
    ],
)
def test_corrections_and_checks(scorer: MathScorer, gold: str, response: str, correct: bool) -> None:
    assert _correct(scorer, gold, response) is correct
