"""The official MCP SDK (`mcp`), both generations, behind the two calls `assay.api.mcp` needs.

mcp 1.x (what NeMo Gym pins, `mcp>=1.27,<2`) registers a low-level server's handlers with decorators
and hands the HTTP request over a context variable; mcp 2.x (verifiers pins 2.0, the index has 2.3)
takes `on_list_tools` / `on_call_tool` in the constructor and hands it in a `ctx`, and its wire models
are snake_case with camelCase aliases. Both are driven here through their own low-level `Server` and
`StreamableHTTPSessionManager`; the handlers below see only wire dicts (camelCase, as on the wire), which
both generations' models validate. Imported only when /mcp is served: `import assay.api` stays free of it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request

from assay.errors import MissingExtraError

ListTools = Callable[[Request | None], Awaitable[list[dict[str, Any]]]]
CallTool = Callable[[Request | None, str, dict[str, Any]], Awaitable[dict[str, Any]]]


def sdk_version() -> str:
    """The installed SDK's version; MissingExtraError without one."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        import mcp.server.lowlevel  # noqa: F401  (the import is the check)

        return version("mcp")
    except (ImportError, PackageNotFoundError) as exc:
        raise MissingExtraError("mcp", "mcp") from exc


def build_server(name: str, version: str, list_tools: ListTools, call_tool: CallTool) -> Any:
    """A low-level MCP server whose tools are `list_tools(request)` and `call_tool(request, name, args)`."""
    from mcp.server.lowlevel import Server

    if "on_call_tool" in inspect.signature(Server.__init__).parameters:
        return _server_v2(Server, name, version, list_tools, call_tool)
    return _server_v1(Server, name, version, list_tools, call_tool)


def _server_v1(server_type: Any, name: str, version: str, list_tools: ListTools, call_tool: CallTool) -> Any:
    import mcp.types as types

    server = server_type(name, version=version)

    async def listed() -> list[Any]:
        request = server.request_context.request
        return [types.Tool.model_validate(tool) for tool in await list_tools(request)]

    async def called(tool: str, arguments: dict[str, Any]) -> Any:
        request = server.request_context.request
        return types.CallToolResult.model_validate(await call_tool(request, tool, arguments))

    server.list_tools()(listed)
    # validate_input=False: a schema mismatch is the session tool's own `invalid_call`, with its wording
    server.call_tool(validate_input=False)(called)
    return server


def _server_v2(server_type: Any, name: str, version: str, list_tools: ListTools, call_tool: CallTool) -> Any:
    import mcp.types as types

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        tools = await list_tools(ctx.request)
        return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in tools])

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        answer = await call_tool(ctx.request, params.name, dict(params.arguments or {}))
        return types.CallToolResult.model_validate(answer)

    return server_type(name, version=version, on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def session_manager(server: Any, idle_timeout_s: float, max_sessions: int) -> Any:
    """The SDK's stateful streamable-HTTP transport for `server` (JSON answers, no SSE per request).
    Older 1.x releases lack the idle timeout and the session cap; they are passed where known."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    wanted: dict[str, Any] = {"session_idle_timeout": idle_timeout_s, "max_sessions": max_sessions}
    known = inspect.signature(StreamableHTTPSessionManager.__init__).parameters
    options = {key: value for key, value in wanted.items() if key in known}
    return StreamableHTTPSessionManager(app=server, json_response=True, stateless=False, **options)
