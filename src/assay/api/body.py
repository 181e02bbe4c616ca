"""Reading a POST body at a bounded cost: counted before it is expanded, parsed off the event loop in pieces.

Why (issue 28): FastAPI parses a JSON body on the event loop, in one `json.loads`, before the route can
count anything. One POST of 1,000,000 empty groups (29 MB, under the body limit) held the loop for over a
minute, so /healthz stopped answering; one item holding a list nested about 490 deep answered HTTP 500 for
its whole batch. `json.loads` is one C call that keeps the GIL, so even a thread does not help with one
big parse. Here:

1. a scan (`re` over the tokens that give JSON its shape: strings, brackets, commas, colons; no values
   are built) counts the elements the route admits (items, groups) and stops at once when one count
   passes `queue_size`: 413, before anything is expanded. It also stops past `MAX_VALUES` tokens (413).
2. each item is parsed on its own (`json.loads` of its bytes, each call short), the envelope with the
   items cut out; all of it in a worker thread, so the loop keeps answering between pieces.
3. an item nested deeper than `MAX_DEPTH`, or holding more than `MAX_ITEM_VALUES` tokens, is not parsed:
   it becomes `Unreadable`, which the pipeline answers as that item's `invalid`. Elsewhere in the body
   such nesting is a 422.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from assay.api.codes import Refusal, refuse
from assay.items import Unreadable

MAX_DEPTH = 64  # nesting inside one item (a code test's args rarely pass 5)
MAX_ITEM_VALUES = 100_000  # JSON tokens in one item (1,000 call tests use about 10,000)
MAX_VALUES = 4_000_000  # JSON tokens in one body

# A string (unrolled, so a long one is one fast match), or one structural character.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]', re.DOTALL)

Path = tuple[str | int, ...]
Pattern = tuple[str, ...]  # keys, and "*" for every element of an array


@dataclass(frozen=True)
class Shape:
    """Where a route's body holds its items, and which arrays it admits by length (with their names)."""

    items: Pattern | None = None
    counted: tuple[tuple[Pattern, str], ...] = ()


SHAPES: dict[str, Shape] = {
    "/v1/rewards": Shape(("items", "*"), ((("items", "*"), "items"),)),
    "/v1/groups": Shape(
        ("groups", "*", "items", "*"),
        ((("groups", "*"), "groups"), (("groups", "*", "items", "*"), "items")),
    ),
    "/v1/trees": Shape(
        ("trees", "*", "leaves", "*", "item"),
        ((("trees", "*"), "trees"), (("trees", "*", "leaves", "*"), "leaves")),
    ),
    "/get_reward": Shape(None, ((("query", "*"), "samples"),)),
    "/v1/validate": Shape(None, ((("tasks", "*"), "tasks"),)),
    "/v1/repo/preflight": Shape(None, ((("tasks", "*"), "tasks"),)),
    "/v1/sessions/step": Shape(None, ((("calls", "*"), "calls"),)),
    "/get_observation": Shape(None, ((("trajectory_ids", "*"), "trajectories"),)),
}


class TooMuch(Exception):
    """The body holds more than the service admits; the route answers 413 with this message."""


def _matches(path: Path, pattern: Pattern) -> bool:
    return len(path) == len(pattern) and all(p in ("*", k) for k, p in zip(path, pattern, strict=True))


_NOT_BLANK = re.compile(rb"\S")


@dataclass
class _Frame:
    kind: bytes  # b"{" or b"["
    path: Path
    level: int  # its depth: 1 for the body's own object
    index: int = 0  # the next element's index (arrays)
    key: str = ""  # the current key (objects)
    expect_key: bool = True
    start: int = 0  # where the current element starts (arrays)
    counted: str | None = None  # the name its elements are admitted under, if any
    units: bool = False  # its elements are items
    depth: int = 0  # deepest nesting inside the current element (unit arrays)
    values: int = 0  # tokens inside the current element (unit arrays)


@dataclass(frozen=True)
class _Unit:
    path: Path
    start: int
    end: int
    depth: int
    values: int


class _Scan:
    """One pass over the structural tokens: every item's bytes and depth, and the counts the shape
    admits; nesting past `MAX_DEPTH` outside the items stops it (ValueError)."""

    def __init__(self, body: bytes, shape: Shape, limit: int) -> None:
        self.body, self.shape, self.limit = body, shape, limit
        self.units: list[_Unit] = []
        self.counts: dict[str, int] = {}
        self._stack: list[_Frame] = []
        self._in_unit: _Frame | None = None  # the unit array whose element is being read

    def run(self) -> None:
        for number, match in enumerate(_TOKEN.finditer(self.body)):
            if number >= MAX_VALUES:
                raise TooMuch(f"the body holds more than {MAX_VALUES} JSON values; split it")
            token = match.group()
            owner = self._in_unit
            if owner is not None:
                owner.values += 1
            if token in (b"{", b"["):
                self._open(token, match.end())
            elif token in (b"}", b"]"):
                if not self._stack:
                    return  # malformed: json.loads will say where
                if token == b"]" and self._stack[-1].kind == b"[":
                    self._element_ends(self._stack[-1], match.start())
                frame = self._stack.pop()
                if frame is self._in_unit:
                    self._in_unit = None
            elif not self._stack:
                continue
            elif token == b",":
                top = self._stack[-1]
                if top.kind == b"[":
                    self._element_ends(top, match.start())
                    top.index += 1
                    top.start = match.end()
                else:
                    top.expect_key = True
            elif token == b":":
                self._stack[-1].expect_key = False
            elif owner is None and self._stack[-1].kind == b"{" and self._stack[-1].expect_key:
                self._stack[-1].key = _key(token)  # keys inside an item are not needed

    def _open(self, kind: bytes, after: int) -> None:
        owner = self._in_unit
        if owner is not None:  # inside an item: only its depth matters
            self._stack.append(_Frame(kind, (), len(self._stack) + 1))
            owner.depth = max(owner.depth, len(self._stack) - owner.level)
            return
        top = self._stack[-1] if self._stack else None
        path: Path = () if top is None else (*top.path, top.index if top.kind == b"[" else top.key)
        frame = _Frame(kind, path, len(self._stack) + 1, start=after)
        if kind == b"[":
            element = (*path, 0)
            frame.counted = next((n for p, n in self.shape.counted if _matches(element, p)), None)
            frame.units = self.shape.items is not None and _matches(element, self.shape.items)
        if frame.level > MAX_DEPTH:  # at once: a path this deep is not worth building
            raise ValueError(f"the body is nested deeper than {MAX_DEPTH} levels outside its items")
        self._stack.append(frame)
        if top is not None and top.units:
            self._in_unit = top  # an item that is an object or array starts here
            top.depth = max(top.depth, 1)

    def _element_ends(self, frame: _Frame, end: int) -> None:
        if frame.counted is None and not frame.units:
            return
        if _NOT_BLANK.search(self.body, frame.start, end) is None:
            return  # `[]`, or a stray comma that json.loads will refuse
        if frame.counted is not None:
            count = self.counts[frame.counted] = self.counts.get(frame.counted, 0) + 1
            if count > self.limit:
                raise TooMuch(
                    f"more than {self.limit} {frame.counted} exceed the queue size {self.limit}"
                    " (ASSAY_QUEUE_SIZE); split it"
                )
        if frame.units:
            path = (*frame.path, frame.index)
            self.units.append(_Unit(path, frame.start, end, frame.depth, frame.values))
            frame.depth = frame.values = 0
            if self._in_unit is frame:
                self._in_unit = None


def _key(token: bytes) -> str:
    try:
        key = json.loads(token)
    except ValueError:
        return ""
    return key if isinstance(key, str) else ""


def read_json(body: bytes, shape: Shape, limit: int) -> Any:
    """The body as JSON, items parsed one by one (an unreadable one as `Unreadable`). Raises TooMuch
    (413), json.JSONDecodeError (422), or ValueError for nesting outside the items (422). Blocking: run
    it in a thread."""
    scan = _Scan(body, shape, limit)
    scan.run()
    pieces: list[bytes] = []
    at = 0
    for unit in scan.units:
        pieces += [body[at : unit.start], b"null"]
        at = unit.end
    pieces.append(body[at:])
    envelope = json.loads(b"".join(pieces), object_pairs_hook=_unique_keys)
    for unit in scan.units:
        _put(envelope, unit.path, _item(body, unit))
    return envelope


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of the envelope; a repeated key would put one array's items into another's places."""
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a key appears twice in one object")
    return found


def _item(body: bytes, unit: _Unit) -> Any:
    if unit.depth > MAX_DEPTH:
        return Unreadable(f"the item is nested deeper than {MAX_DEPTH} levels")
    if unit.values > MAX_ITEM_VALUES:
        return Unreadable(f"the item holds more than {MAX_ITEM_VALUES} JSON values")
    return json.loads(body[unit.start : unit.end])


def _put(envelope: Any, path: Path, value: Any) -> None:
    holder = envelope
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value


class BoundedRequest(Request):
    """A request whose `json()` is `read_json` in a thread, under the route's shape."""

    shape = Shape()

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            limit = self.app.state.settings.queue_size
            try:
                self._json = await asyncio.to_thread(read_json, body, self.shape, limit)
            except TooMuch as exc:
                raise refuse(Refusal.TOO_LARGE, str(exc)) from None
            except json.JSONDecodeError:
                raise
            except ValueError as exc:
                raise refuse(Refusal.INVALID, f"invalid request: {exc}") from None
        return self._json


class BoundedRoute(APIRoute):
    """The route class of every POST route: its body is read by `BoundedRequest` with its `SHAPES` entry."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        request_class = type("BoundedRequest", (BoundedRequest,), {"shape": SHAPES.get(self.path, Shape())})

        async def bounded(request: Request) -> Response:
            return await handler(request_class(request.scope, request.receive))

        return bounded
