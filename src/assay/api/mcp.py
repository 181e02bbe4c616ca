"""Assay sessions over MCP (issue 39): streamable HTTP at `/mcp`, served by the official `mcp` SDK.

How an MCP session is bound to an Assay session (one to one, for the MCP session's whole life):

- `X-Assay-Session: <session_id>` on the `initialize` request (as NeMo Gym carries its session in a
  header) binds the new MCP session to that session, opened by `POST /v1/sessions`. Closing the MCP
  session leaves the Assay session to its owner (`close_session`, DELETE or its TTL).
- Without the header, the MCP session starts unbound and its one tool is `open_session`; the session
  that opens is owned by the MCP session and closed when the client ends the MCP session (DELETE /mcp).
- A later request of an established MCP session that names another session in `X-Assay-Session` is
  refused (a JSON-RPC error, so the SDK's clients deliver it to the call; 400 for GET and DELETE) and
  reaches nothing. Tool arguments never name a session: the policy cannot reach another one.

Tool errors (bad arguments, an unknown tool, a closed or expired session, a full server) are
`CallToolResult`s with `isError: true` (assay.api.mcp_tools). The SDK is imported when the app starts;
without the `mcp` extra `/mcp` answers 501 naming it. MCP sessions idle for `sessions.max_ttl_s` end.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.types import Message, Receive, Scope, Send

from assay import __version__
from assay.api.codes import OK, Refusal
from assay.api.envelope import refusal_response
from assay.api.mcp_sdk import build_server, sdk_version, session_manager
from assay.api.mcp_tools import Binding, answer, call_tool, list_tools
from assay.engine.service import Service
from assay.errors import MissingExtraError

log = logging.getLogger("assay.mcp")
SESSION_HEADER = "x-assay-session"
MCP_SESSION_HEADER = "mcp-session-id"
_KEPT = 100_000  # MCP sessions remembered; the oldest binding is dropped past it
_INVALID_REQUEST = -32600  # JSON-RPC's code for a request the server will not take
_PARSE_ERROR = -32700  # JSON-RPC's code for a body that is not JSON


class McpService:
    """The SDK's server and transport for one app, and the MCP session -> Assay session table."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.sdk = sdk_version()
        self.bindings: OrderedDict[str, Binding] = OrderedDict()
        sessions = app.state.settings.sessions
        self.server = build_server("assay", __version__, self._list, self._call)
        self.manager = session_manager(self.server, sessions.max_ttl_s, max(64, 4 * sessions.max_open))

    @property
    def engine(self) -> Service:
        engine: Service = self.app.state.engine
        return engine

    def binding(self, request: Request | None) -> Binding:
        """The binding of the MCP session `request` belongs to; for a request outside any known MCP
        session (a stateless client), one made from its own X-Assay-Session."""
        if request is None:
            return Binding()
        found = self.bindings.get(request.headers.get(MCP_SESSION_HEADER, ""))
        return found if found is not None else Binding(request.headers.get(SESSION_HEADER))

    async def _list(self, request: Request | None) -> list[dict[str, Any]]:
        return list_tools(self.engine, self.app, self.binding(request))

    async def _call(self, request: Request | None, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return await call_tool(self.engine, self.app, self.binding(request), name, arguments)
        except Exception as exc:  # our failure: a tool error for the client, the traceback for the log
            log.exception("mcp: the %s call failed", name)
            return answer(f"[the server failed ({type(exc).__name__}); its log has the details]", True)

    def bind(self, mcp_session: str, session_id: str | None) -> None:
        self.bindings[mcp_session] = Binding(session_id)
        while len(self.bindings) > _KEPT:
            self.bindings.popitem(last=False)

    async def forget(self, mcp_session: str) -> None:
        """The client ended the MCP session: drop its binding and close the session it owned."""
        binding = self.bindings.pop(mcp_session, None)
        if binding is not None and binding.owned and binding.session_id is not None:
            await self.engine.close_session(binding.session_id)


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[None]:
    """Run the SDK's transport for the app's lifetime (a task group its MCP sessions live in)."""
    try:
        service = McpService(app)
    except MissingExtraError as exc:
        app.state.mcp, app.state.mcp_missing = None, str(exc)
        yield
        return
    app.state.mcp = service
    async with service.manager.run():
        yield


class McpEndpoint:
    """The ASGI app at `/mcp`: the binding checks, then the SDK's streamable-HTTP transport."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope["app"].state
        service: McpService | None = getattr(state, "mcp", None)
        if service is None:
            missing = getattr(state, "mcp_missing", "MCP is not served yet")
            await refusal_response(Refusal.NOT_INSTALLED, missing)(scope, receive, send)
            return
        headers = Headers(scope=scope)
        mcp_session, asked = headers.get(MCP_SESSION_HEADER), headers.get(SESSION_HEADER)
        binding = service.bindings.get(mcp_session) if mcp_session else None
        message: Any = None
        if scope["method"] == "POST":  # read here: the SDK answers bytes that are not UTF-8 with a 500
            try:
                body = await Request(scope, receive).body()
            except ClientDisconnect:  # nobody to answer
                return
            try:
                message = json.loads(body.decode("utf-8"))
            except ValueError as exc:
                await _jsonrpc_error(
                    send, None, _PARSE_ERROR, f"Parse error: {exc}", Refusal.BAD_REQUEST.code
                )
                return
            receive = _replay(body, receive)
        if binding is not None and asked is not None and asked != binding.session_id:
            await _refuse_other_session(scope, receive, send, message)
            return
        status: list[int] = []

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
                opened = Headers(raw=message.get("headers", [])).get(MCP_SESSION_HEADER)
                if mcp_session is None and opened is not None and opened not in service.bindings:
                    service.bind(opened, asked)
            await send(message)

        await service.manager.handle_request(scope, receive, watched)
        if scope["method"] == "DELETE" and mcp_session is not None and status[:1] == [OK]:
            await service.forget(mcp_session)


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body already read handed over once more (then the connection's own messages)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


async def _refuse_other_session(scope: Scope, receive: Receive, send: Send, message: Any) -> None:
    """Another session's header on an established MCP session: nothing is forwarded. A POST is answered
    a JSON-RPC error (HTTP 200, so the SDK's clients hand it to the call that sent it)."""
    text = "this MCP session is bound to another Assay session (X-Assay-Session); open a new MCP session"
    if scope["method"] != "POST":
        await refusal_response(Refusal.BAD_REQUEST, text)(scope, receive, send)
        return
    request_id = message.get("id") if isinstance(message, dict) else None
    await _jsonrpc_error(send, request_id, _INVALID_REQUEST, text, OK)


async def _jsonrpc_error(send: Send, request_id: Any, code: int, text: str, status: int) -> None:
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}
    payload = json.dumps(error).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
