"""The one JSON Lines reader: numbering, blank lines, bad lines named, objects-only mode."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from assay.jsonl import Line, read_lines


def test_lines_keep_their_file_numbers_and_blank_lines_are_skipped() -> None:
    lines = list(read_lines(['{"a": 1}\n', "\n", "   \n", "[1, 2]\n", "{nope\n"]))
    assert lines[:2] == [Line(1, {"a": 1}), Line(4, [1, 2])]
    assert lines[2].number == 5 and lines[2].value is None
    assert lines[2].problem is not None and lines[2].problem.startswith("line 5: not valid JSON (")


def test_objects_mode_names_a_line_that_is_not_an_object() -> None:
    lines = list(read_lines(['{"a": 1}', "3", '"text"'], objects=True))
    assert lines[0] == Line(1, {"a": 1})
    assert [line.problem for line in lines[1:]] == ["line 2: not a JSON object", "line 3: not a JSON object"]


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(st.lists(values, max_size=8))
def test_any_json_values_round_trip_in_order(rows: list[object]) -> None:
    text = [json.dumps(row) + "\n" for row in rows]
    assert [line.value for line in read_lines(text)] == rows
    assert all(line.problem is None for line in read_lines(text))
