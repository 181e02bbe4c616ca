"""The plain-data codec that call results cross the process boundary with, and the sealed blob path."""

from __future__ import annotations

import json
import math
import os
import socket
import threading
from collections import Counter, OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.sandbox import _runner
from assay.sandbox._runner import NotPlain, decode_plain, from_wire, to_wire

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.binary(max_size=8),
)
_hashable = st.one_of(_scalars, st.tuples(_scalars, _scalars), st.frozensets(_scalars, max_size=3))
plain = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(_hashable, inner, max_size=4)
        | st.sets(_hashable, max_size=4)
        | st.frozensets(_hashable, max_size=4)
    ),
    max_leaves=10,
)


def same(a: Any, b: Any) -> bool:
    """Equal, and of exactly the same types all the way down (1 == 1.0 == True must not pass)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


@given(plain)
def test_plain_values_round_trip_with_their_types(value: Any) -> None:
    assert same(decode_plain(json.dumps(to_wire(value)).encode()), value)


@pytest.mark.parametrize("value", [math.inf, -math.inf])
def test_infinities_round_trip(value: float) -> None:
    assert from_wire(to_wire(value)) == value


def test_nan_round_trips_as_nan() -> None:
    assert math.isnan(from_wire(to_wire(math.nan)))


class Int(int):
    pass


class Str(str):
    pass


@pytest.mark.parametrize(
    "value", [Int(3), Str("x"), [1, Int(3)], {"k": (Str("x"),)}, object(), iter([1]), len]
)
def test_anything_but_builtin_data_is_refused(value: Any) -> None:
    with pytest.raises(NotPlain):
        to_wire(value)


def test_stdlib_dicts_cross_as_dicts() -> None:
    assert same(from_wire(to_wire(Counter("aab"))), {"a": 2, "b": 1})
    assert same(from_wire(to_wire(OrderedDict(x=1))), {"x": 1})


@pytest.mark.parametrize(
    "document",
    [
        '{"X": []}',
        '{"T": 1}',
        '{"T": [], "D": []}',
        '{"D": [[1]]}',
        '{"G": "f"}',
        '{"B": "zz"}',
        '{"S": [[1]]}',
    ],
)
def test_a_document_that_is_not_plain_data_is_refused(document: str) -> None:
    with pytest.raises(ValueError):
        decode_plain(document.encode())


def test_deep_nesting_is_refused_not_a_crash() -> None:
    with pytest.raises(ValueError):
        decode_plain(("[" * 100_000 + "]" * 100_000).encode())


@pytest.mark.parametrize("kind", ["pipe", "socket"])
def test_a_sealed_blob_moves_into_a_memfd_whole(kind: str) -> None:
    data = os.urandom(300_000)
    if kind == "pipe":
        source, sink = os.pipe()
        writer = threading.Thread(target=lambda: os.write(sink, data) and os.close(sink))
    else:
        left, right = socket.socketpair()
        source, sink = right.detach(), left
        writer = threading.Thread(target=lambda: left.sendall(data))
    writer.start()
    target = os.memfd_create("sealed")
    try:
        _runner._splice_into(source, target, len(data))
        writer.join()
        assert os.pread(target, len(data) + 1, 0) == data
    finally:
        os.close(target)
        os.close(source)
        if kind == "socket":
            left.close()
