"""HTTP status codes are chosen in one module, `assay.api.codes` (issue 24, part 5).

An AST walk over the server side (the API, the verl tool server route, the session store whose errors
become 404/410) finds every status code written anywhere else: an integer from 400 to 599, or any literal
number given as a status (`status_code=201`, `HTTPException(422, ...)`, an ASGI `"status": 413`). Numbers
the HTTP layer reads from a server it calls (a client's `in (404, 410)`) are not on that side.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.api.codes import Refusal, envelope_type, refusal_of
from assay.errors import QueueFullError
from assay.sessions.store import SessionGone, SessionsFull
from assay.settings import Settings

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"
SERVER_SIDE = [
    *sorted((SRC / "api").glob("*.py")),
    SRC / "distributed" / "sessions.py",
    SRC / "sessions" / "store.py",
]
HOME = SRC / "api" / "codes.py"
_STATUS_CALLS = {"HTTPException", "JSONResponse", "AsciiJSONResponse", "Response", "error_response"}


def _literal_numbers(node: ast.AST) -> list[int]:
    return [
        n.value
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and type(n.value) is int and 100 <= n.value <= 599
    ]


def status_codes_written(source: str) -> list[tuple[int, int]]:
    """(line, code) for every HTTP status a module writes itself."""
    found: list[tuple[int, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and type(node.value) is int and 400 <= node.value <= 599:
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.keyword) and node.arg in ("status_code", "status"):
            found += [(node.value.lineno, code) for code in _literal_numbers(node.value)]
        elif isinstance(node, ast.Call) and node.args:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in _STATUS_CALLS:
                found += [(node.args[0].lineno, code) for code in _literal_numbers(node.args[0])]
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "status":
                    found += [(value.lineno, code) for code in _literal_numbers(value)]
    return sorted(set(found))


def test_the_walk_finds_each_way_of_writing_a_status() -> None:
    planted = """
from fastapi import HTTPException
raise HTTPException(409, "x")
JSONResponse({}, status_code=503 if busy else 200)
router.post("/x", status_code=201)
send({"type": "http.response.start", "status": 302})
Response(204)
retry = 120  # seconds, not a status
"""
    assert sorted(code for _, code in status_codes_written(planted)) == [200, 201, 204, 302, 409, 503]


@pytest.mark.parametrize("path", SERVER_SIDE, ids=lambda p: str(p.relative_to(SRC)))
def test_no_server_module_but_codes_writes_a_status(path: Path) -> None:
    assert path.exists()
    written = status_codes_written(path.read_text())
    if path == HOME:
        assert written, "the walk must see the codes in their home"
    else:
        assert written == [], f"{path.relative_to(SRC)} writes HTTP statuses itself: {written}"


def test_exceptions_map_to_their_refusals() -> None:
    assert refusal_of(QueueFullError(5, 4, retry_after_s=1)) is Refusal.QUEUE_FULL
    assert refusal_of(SessionsFull(3, 1.0)) is Refusal.SESSIONS_FULL
    assert refusal_of(SessionGone("s", "deleted", ended=True)).code == 410
    assert refusal_of(SessionGone("s", "never", ended=False)).code == 404
    assert refusal_of(ValueError("a bug")) is Refusal.INTERNAL


def test_envelope_types_are_the_wire_names() -> None:
    # The names clients read (contract.md); a shared status takes its first kind's name.
    expected = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
    expected |= {415: "unsupported_media_type", 422: "validation_error", 429: "queue_full"}
    expected |= {
        499: "error",
        500: "internal",
        503: "unavailable",
        504: "busy",
        409: "error",
        502: "internal",
    }
    assert {code: envelope_type(code) for code in expected} == expected


def test_the_openapi_document_lists_the_same_refusals() -> None:
    with TestClient(create_app(Settings(workers=1))) as client:
        paths = client.get("/openapi.json").json()["paths"]
    assert sorted(paths["/v1/rewards"]["post"]["responses"]) == ["200", "400", "413", "422", "429", "503"]
    assert sorted(paths["/run_code"]["post"]["responses"]) == [
        "200",
        "400",
        "413",
        "422",
        "429",
        "503",
        "504",
    ]
    assert sorted(paths["/v1/groups"]["post"]["responses"]) == ["200", "413", "422", "429"]
    session = paths["/v1/sessions/{session_id}/step"]["post"]["responses"]
    assert sorted(session) == ["200", "400", "404", "410", "413", "422", "429", "503"]
    assert "session_gone" in session["410"]["description"]
    assert sorted(paths["/v1/sessions"]["post"]["responses"])[0] == "201"
