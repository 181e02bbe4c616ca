"""The comparison rules of compare.py, one property a test, plus invariants under Hypothesis."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from assay.verifiers.sql.compare import (
    Comparison,
    Fingerprint,
    Tolerance,
    compare,
    tie_blocks,
    valid_limit_cut,
)

TOL = Tolerance()


def check(
    gold: list[tuple[Any, ...]], pred: list[tuple[Any, ...]], ordered: bool = False, **kw: Any
) -> Comparison:
    gold_width = kw.pop("gold_width", 1)
    pred_width = kw.pop("pred_width", 1)
    gold_width = len(gold[0]) if gold else gold_width
    pred_width = len(pred[0]) if pred else pred_width
    return compare(gold, pred, gold_width=gold_width, pred_width=pred_width, ordered=ordered, tol=TOL, **kw)


def test_duplicates_count() -> None:
    assert not check([(1,), (2,)], [(1,), (2,), (2,)]).equal
    assert not check([(1,), (2,), (2,)], [(1,), (1,), (2,)]).equal  # same set, other multiplicities


def test_row_order_is_ignored_without_order_by() -> None:
    assert check([(1, "a"), (2, "b")], [(2, "b"), (1, "a")]).equal


def test_row_order_is_enforced_with_order_by() -> None:
    result = check([(1,), (2,)], [(2,), (1,)], ordered=True)
    assert not result.equal and "order" in result.reason


def test_ties_in_the_sort_key_may_swap() -> None:
    gold = [("a", 1), ("b", 1), ("c", 2)]
    pred = [("b", 1), ("a", 1), ("c", 2)]
    assert check(gold, pred, ordered=True, blocks=lambda: tie_blocks([(1,), (1,), (2,)])).equal
    assert not check(
        gold, [("c", 2), ("a", 1), ("b", 1)], ordered=True, blocks=lambda: tie_blocks([(1,), (1,), (2,)])
    ).equal


def test_without_tie_information_order_is_strict() -> None:
    assert not check([("a", 1), ("b", 1)], [("b", 1), ("a", 1)], ordered=True).equal


def test_columns_in_any_order() -> None:
    result = check([(1, "x", 2.5), (2, "y", 3.5)], [("y", 3.5, 2), ("x", 2.5, 1)])
    assert result.equal and "columns in another order" in result.reason


def test_columns_with_equal_multisets_but_crossed_rows_differ() -> None:
    # Each column matches some column as a multiset, but no permutation gives the same rows.
    assert not check([(1, 2), (2, 1)], [(1, 1), (2, 2)]).equal


def test_column_count_must_match() -> None:
    result = check([(1,)], [(1, 1)])
    assert not result.equal and "column count" in result.reason


def test_integer_and_float_of_the_same_value_are_equal() -> None:
    assert check([(1,), (2,)], [(1.0,), (Decimal("2.00"),)]).equal


def test_floats_within_tolerance() -> None:
    assert check([(0.1 + 0.2,)], [(0.3,)]).equal
    assert check([(1e6 + 1e-4,)], [(1e6,)]).equal  # relative tolerance 1e-6
    assert not check([(1.0,)], [(1.001,)]).equal


def test_floats_near_a_rounding_boundary_still_match() -> None:
    # 12-digit rounding puts these on either side of a boundary; the tolerant pass matches them.
    assert check([(0.49999999999949,), (7,)], [(7,), (0.4999999999995001,)]).equal


def test_large_integers_stay_exact() -> None:
    assert not check([(2**60,)], [(2**60 + 1,)]).equal


def test_null_equals_null_only() -> None:
    assert check([(None,)], [(None,)]).equal
    assert not check([(None,)], [(0,)]).equal
    assert not check([(None,)], [("",)]).equal


def test_booleans_are_not_numbers() -> None:
    assert not check([(True,)], [(1,)]).equal


def test_text_is_exact() -> None:
    assert not check([("Oslo",)], [("oslo",)]).equal
    assert not check([("1",)], [(1,)]).equal


def test_nan_equals_nan() -> None:
    assert check([(float("nan"),)], [(float("nan"),)]).equal


def test_empty_results_with_the_same_width_are_equal() -> None:
    assert check([], [], gold_width=2, pred_width=2).equal
    assert not check([], [], gold_width=2, pred_width=1).equal


def test_row_count_difference_is_reported() -> None:
    assert check([(1,)], []).reason == "row count differs: reference 1, prediction 0"


VALUES = st.one_of(
    st.none(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=3),
)
TABLES = st.integers(1, 4).flatmap(lambda width: st.lists(st.tuples(*[VALUES] * width), max_size=12))


@given(TABLES)
def test_a_result_equals_itself(rows: list[tuple[Any, ...]]) -> None:
    assert check(rows, list(rows), ordered=True, gold_width=1, pred_width=1).equal


@given(TABLES, st.randoms(use_true_random=False))
def test_shuffled_rows_and_columns_are_equal_without_order(rows: list[tuple[Any, ...]], rng: Any) -> None:
    if not rows:
        return
    perm = list(range(len(rows[0])))
    rng.shuffle(perm)
    shuffled = [tuple(row[i] for i in perm) for row in rows]
    rng.shuffle(shuffled)
    assert check(rows, shuffled).equal


@given(TABLES, st.data())
def test_dropping_a_row_is_never_equal(rows: list[tuple[Any, ...]], data: st.DataObject) -> None:
    if not rows:
        return
    index = data.draw(st.integers(0, len(rows) - 1))
    assert not check(
        rows, rows[:index] + rows[index + 1 :] if len(rows) > 1 else [], pred_width=len(rows[0])
    ).equal


def test_valid_limit_cut() -> None:
    full = [("a", 1), ("b", 2), ("c", 2), ("d", 2), ("e", 3)]
    keys = [(1,), (2,), (2,), (2,), (3,)]
    assert valid_limit_cut([("a", 1), ("d", 2)], full, keys, TOL)  # any of the rows tied at the cut
    assert not valid_limit_cut([("a", 1), ("e", 3)], full, keys, TOL)  # a row past the tie
    assert not valid_limit_cut([("b", 2), ("a", 1)], full, keys, TOL)  # order before the cut still holds
    assert not valid_limit_cut([("a", 1)], full, keys, TOL)  # the cut is not inside a tie


# Values that fingerprints could confuse: True and 1, 1 and 1.0, -0.0 and 0.0, NaN, NULL and "".
TRICKY = st.one_of(
    st.sampled_from([None, True, False, 0, 1, 1.0, -0.0, 0.0, math.nan, "", "1", Decimal("1.00")]),
    st.integers(-3, 3),
    st.floats(width=16),
)
ROWS = st.integers(1, 3).flatmap(
    lambda width: st.tuples(st.just(width), st.lists(st.tuples(*[TRICKY] * width), max_size=5))
)


def lookalike(value: Any) -> Any:
    """A value that looks like `value`: equal by the rules (1 and 1.0, 0.0 and -0.0, floats within the
    tolerance) or not (True and 1, NULL and "")."""
    if value is None or value == "":
        return "" if value is None else None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float) and math.isfinite(value):
        return value * (1 + 1e-9) if value else -value  # within the tolerance; 0.0 and -0.0
    return value


@given(ROWS, st.data(), st.booleans())
def test_a_fingerprint_decides_only_what_compare_would(
    table: tuple[int, list[tuple[Any, ...]]], data: st.DataObject, ordered: bool
) -> None:
    """The sql equivalence skips compare() where fingerprints decide (issue 42): equal only where compare
    finds them equal both ways, and never unequal as multisets where compare finds them equal."""
    width, a = table
    swaps = data.draw(st.lists(st.booleans(), min_size=width, max_size=width))  # per column
    b = [tuple(lookalike(v) if swap else v for v, swap in zip(row, swaps, strict=True)) for row in a]
    b = data.draw(st.permutations(b)) if data.draw(st.booleans()) else b
    columns = data.draw(st.permutations(range(width)))
    b = [tuple(row[j] for j in columns) for row in b]
    verdicts = [
        compare(gold, pred, gold_width=width, pred_width=width, ordered=ordered, tol=Tolerance()).equal
        for gold, pred in ((a, b), (b, a))
    ]
    first, second = Fingerprint.of(width, a), Fingerprint.of(width, b)
    if first.decides_equal(second, ordered):
        assert verdicts == [True, True]
    if not ordered and any(verdicts):
        assert first.may_equal_as_multisets(second) and second.may_equal_as_multisets(first)


def test_a_fingerprint_keeps_booleans_apart_from_numbers_and_order_where_it_counts() -> None:
    one, true = Fingerprint.of(1, [(1,), (2,)]), Fingerprint.of(1, [(True,), (2,)])
    assert not one.decides_equal(true, ordered=False)
    swapped = Fingerprint.of(1, [(2,), (1,)])
    assert one.decides_equal(swapped, ordered=False) and not one.decides_equal(swapped, ordered=True)
