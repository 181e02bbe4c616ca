"""The multilingual cue table (assay.verifiers.math.cues), tested from the table itself: every cue of every
language finds the answer after it, rejects a different number, a second number after the language's
"or" (a hedge) and a wrong option letter."""

from __future__ import annotations

import pytest

from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer
from assay.verifiers.math.cues import LANGUAGES, Language

WORKING = "We have 3 + 4 = 7, and 7 * 6 = 42. Also 5 * 8 = 40.\n\n"


def _cues(language: Language) -> list[str]:
    """Each cue as a response writes it: a copula as it is, a noun with a colon (first word capitalised)."""
    cues = [*language.copulas, *(f"{noun}:" for noun in language.nouns)]
    return [cue[:1].upper() + cue[1:] for cue in cues]


CASES = [(language, cue) for language in LANGUAGES for cue in _cues(language)]
IDS = [f"{language.code}-{index}" for index, (language, _) in enumerate(CASES)]


@pytest.fixture(scope="module")
def scorer() -> MathScorer:
    return MathScorer(Settings(workers=1, plugins=[]))


def _score(scorer: MathScorer, gold: str, response: str) -> tuple[bool | None, dict[str, object]]:
    result = scorer.score(Item(task="math", response=response, reference=gold), MathOptions())
    assert result.status.value == "ok", result.reason
    return result.correct, result.details or {}


def _closer(language: Language) -> str:
    return language.trailers[0] if language.trailers else "."


def test_the_table_covers_at_least_fifteen_languages() -> None:
    assert len({language.code for language in LANGUAGES}) >= 15
    assert all(language.copulas and language.nouns and language.or_words for language in LANGUAGES)


@pytest.mark.parametrize(("language", "cue"), CASES, ids=IDS)
def test_a_cued_number_is_the_answer(scorer: MathScorer, language: Language, cue: str) -> None:
    response = f"{WORKING}{cue} 42{_closer(language)}"
    correct, details = _score(scorer, "42", response)
    assert correct is True, (response, details)
    # a cue two languages share ("resultado", "результат") may be named by either
    sharing = {other.code for other in LANGUAGES if cue.lower().rstrip(":") in (*other.copulas, *other.nouns)}
    assert details["extraction"] in {f"answer-cue:{code}" for code in sharing}


@pytest.mark.parametrize(("language", "cue"), CASES, ids=IDS)
def test_a_cued_number_is_not_another_number(scorer: MathScorer, language: Language, cue: str) -> None:
    correct, _ = _score(scorer, "40", f"{WORKING}{cue} 42{_closer(language)}")
    assert correct is False


@pytest.mark.parametrize(("language", "cue"), CASES, ids=IDS)
def test_two_numbers_joined_by_or_are_a_hedge(scorer: MathScorer, language: Language, cue: str) -> None:
    for word in language.or_words:
        response = f"{WORKING}{cue} 42 {word} 40{_closer(language)}"
        correct, details = _score(scorer, "42", response)
        assert correct is False, (response, details)


@pytest.mark.parametrize(("language", "cue"), CASES, ids=IDS)
def test_a_cued_letter_is_the_option(scorer: MathScorer, language: Language, cue: str) -> None:
    response = f"{WORKING}{cue} C{_closer(language)}"
    assert _score(scorer, "C", response)[0] is True, response
    assert _score(scorer, "B", response)[0] is False, response
