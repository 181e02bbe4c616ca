"""Splitting responses into steps and refusing steps that would misalign scores."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assay.prm.steps import check_steps, split_steps


def test_blank_lines_separate_steps() -> None:
    assert split_steps("a = 1\n\nb = 2\n\n\nc = 3") == ["a = 1", "b = 2", "c = 3"]


def test_a_single_newline_stays_inside_a_step() -> None:
    assert split_steps("line one\nline two\n\nnext") == ["line one\nline two", "next"]


def test_whitespace_only_lines_and_crlf_count_as_blank() -> None:
    assert split_steps("a\r\n   \r\nb\n \t \nc") == ["a", "b", "c"]


def test_a_configured_separator_is_used_verbatim() -> None:
    assert split_steps("Step 1: x ## Step 2: y ##", " ## ") == ["Step 1: x", "Step 2: y ##"]


def test_an_empty_response_has_no_steps_and_is_refused() -> None:
    assert split_steps(" \n\n ") == []
    problem = check_steps([], "<extra_0>", 10)
    assert problem is not None and "no steps" in problem.reason


def test_a_step_containing_the_marker_is_refused() -> None:
    problem = check_steps(["fine", "sneaky <extra_0> tag"], "<extra_0>", 10)
    assert problem is not None and "step 1" in problem.reason


def test_too_many_steps_are_refused_with_the_setting_named() -> None:
    problem = check_steps(["x"] * 5, "<extra_0>", 4)
    assert problem is not None and "max_steps" in problem.reason


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n"), min_size=1), max_size=8))
def test_splitting_joined_steps_gives_them_back(steps: list[str]) -> None:
    kept = [s.strip() for s in steps if s.strip()]
    assert split_steps("\n\n".join(steps)) == kept
