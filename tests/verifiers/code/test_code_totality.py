"""Totality of the parts of the code scorer that see raw input: they never raise anything unexpected."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.sandbox import lookup
from assay.verifiers.code.blocks import extract_code
from assay.verifiers.code.compare import check_stdout
from assay.verifiers.code.scorer import parse_tests

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
keys = st.sampled_from(["stdin", "stdout", "fn_name", "args", "expected", "assert", "other"])
tests = st.lists(st.dictionaries(keys, json_values, max_size=4), max_size=4)


@given(tests, st.sampled_from(["python", "cpp"]))
@settings(suppress_health_check=[HealthCheck.too_slow])  # generation is slow on a loaded shared machine
def test_parse_tests_accepts_or_says_why(raw: list[dict[str, Any]], language: str) -> None:
    lang = lookup(language)
    assert lang is not None
    try:
        plan = parse_tests(raw, lang)
    except ValueError as exc:
        assert str(exc)
    else:
        assert len(plan.inputs) == len(plan.expected) == len(raw)


@given(st.text(max_size=300))
def test_extract_code_is_total(response: str) -> None:
    python = lookup("python")
    assert python is not None
    code = extract_code(response, python)
    assert code is None or isinstance(code, str)


@given(st.binary(max_size=50), st.text(max_size=50), st.sampled_from(["tokens", "exact", "float"]))
def test_checkers_are_total(actual: bytes, expected: str, checker: str) -> None:
    assert isinstance(check_stdout(actual, expected, checker, 1e-6), bool)
