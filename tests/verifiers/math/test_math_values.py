"""Speed rules of issue 30 that must not change a verdict: `values.split_top` jumps between tokens with one
compiled pattern and must split exactly where a reading of every position does; `parse_value` shares the
parse of short answers; symbolic's converter reads number literals as latex2sympy does, without its
`parse_expr` round."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from sympy import srepr

from assay.verifiers.math.values import parse_value, split_top

SEPARATORS = [
    (",",),
    (",", ";"),
    ("&",),
    (" or ", " and ", ";", "\\text{or}", "\\text{and}"),
    ("\\cup", " U ", "∪"),
    ("\\setminus", "\\backslash"),
]
# Pieces that a bracket count and a separator search can confuse: sizing commands and their prefixes,
# commands that start like them, braces inside separators, letters that start separators.
PIECES = [
    *("\\left", "\\right", "\\langle", "\\rangle", "\\leftarrow", "\\rightarrow", "\\lef", "\\righ"),
    *("(", ")", "[", "]", "{", "}", "\\{", "\\}", "\\"),
    *(",", ";", "&", " or ", " and ", "\\text{or}", "\\text{and}", "\\cup", " U ", "∪", "\\setminus"),
    *("x", "1", " ", "t", "o", "r", "a", "n", "d", "U"),
]


def position_by_position(text: str, separators: tuple[str, ...]) -> list[str]:
    """The reading `split_top` must agree with: every position in turn, a sizing command skipped."""
    parts, depth, start, index = [], 0, 0, 0
    while index < len(text):
        if text.startswith(("\\left", "\\right"), index):
            index += 5
            continue
        if text[index] in "([{" or text.startswith("\\langle", index):
            depth += 1
        elif text[index] in ")]}" or text.startswith("\\rangle", index):
            depth = max(depth - 1, 0)
        elif depth == 0:
            sep = next((s for s in separators if text.startswith(s, index)), None)
            if sep is not None:
                parts.append(text[start:index])
                start = index + len(sep)
                index = start
                continue
        index += 1
    parts.append(text[start:])
    return [part.strip() for part in parts]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16).map("".join), st.sampled_from(SEPARATORS))
def test_split_top_splits_where_every_position_is_read(text: str, separators: tuple[str, ...]) -> None:
    assert split_top(text, separators) == position_by_position(text, separators)


def test_split_top_keeps_brackets_and_sizing_commands_whole() -> None:
    assert split_top("\\left(1, 2\\right), 3", (",",)) == ["\\left(1, 2\\right)", "3"]
    assert split_top("\\langle 1, 2 \\rangle; 3", (",", ";")) == ["\\langle 1, 2 \\rangle", "3"]
    assert split_top("x \\text{or} y", ("\\text{or}",)) == ["x", "y"]
    assert split_top("no separator here", (",",)) == ["no separator here"]


def test_a_short_answer_is_parsed_once_and_a_long_one_every_time() -> None:
    assert parse_value("\\frac{3}{4}") is parse_value("\\frac{3}{4}")
    long_answer = " + ".join(f"x_{{{i}}}" for i in range(200))
    assert parse_value(long_answer) == parse_value(long_answer)
    assert parse_value(long_answer) is not parse_value(long_answer)


# Number literals as latex2sympy's lexer hands them to `parse_number` (digits, thousands commas, a point).
LITERALS = st.one_of(
    st.from_regex(r"[0-9]{1,25}", fullmatch=True),
    st.from_regex(r"[0-9]{1,3}(,[0-9]{3}){1,3}(\.[0-9]{1,6})?", fullmatch=True),
    st.from_regex(r"[0-9]{0,12}\.[0-9]{0,12}", fullmatch=True).filter(lambda t: t != "."),
)


@settings(max_examples=300, deadline=None)
@given(LITERALS)
def test_a_number_literal_is_read_as_the_library_reads_it(literal: str) -> None:
    """symbolic's converter reads plain literals without `parse_expr`: the same sympy number results."""
    from latex2sympy2_extended.latex2sympy2 import ConversionConfig, _Latex2Sympy

    from assay.verifiers.math.symbolic import _converter

    ours = _converter().parse_number(literal)
    theirs = _Latex2Sympy(None, None, False, config=ConversionConfig()).parse_number(literal)
    assert (type(ours), ours, getattr(ours, "_prec", None)) == (
        type(theirs),
        theirs,
        getattr(theirs, "_prec", None),
    )
    assert srepr(ours) == srepr(theirs)
