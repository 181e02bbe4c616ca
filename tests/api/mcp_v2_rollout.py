"""Run by tests/api/test_mcp.py with .venv-mcp's Python (Assay beside mcp 2.3.0): a live Assay server
serving /mcp through the 2.x SDK, driven by the 2.x SDK's own client. Prints one JSON line of what it saw.

Not a test module itself (its imports are the 2.x SDK's, which the test process does not have)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import httpx2
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from assay.api import create_app
from assay.settings import Settings

PREFIX = Path(__file__).resolve().parents[2] / ".sandbox-runtime" / "python"
ITEM = {"task": "math", "prompt": "What is 6 * 7?", "reference": "42"}


def _serve() -> tuple[uvicorn.Server, threading.Thread, str, Any]:
    sessions = {"max_open": 4, "call_wall_s": 5.0, "memory_mb": 256}
    settings = Settings(workers=1, code={"python_prefix": PREFIX, "tmpfs_mb": 64}, sessions=sessions)
    app = create_app(settings)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(600):
        if server.started:
            break
        thread.join(0.1)
    return server, thread, f"http://127.0.0.1:{port}", app


async def _rollout(url: str, session_id: str | None) -> dict[str, Any]:
    headers = {"X-Assay-Session": session_id} if session_id else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        if session_id is None:
            opened = await session.call_tool("open_session", {"item": ITEM, "tools": ["python"]})
            assert not opened.is_error, opened
        tools = [tool.name for tool in (await session.list_tools()).tools]
        outputs = []
        for code in ("x = 6", "x = x * 7", "print(x)"):
            outputs.append((await session.call_tool("python", {"code": code})).content[0].text)
        verdict = await session.call_tool("verify", {"response": "\\boxed{42}"})
        errors = [(await session.call_tool("shell", {})).is_error]
        errors.append((await session.call_tool("python", {"source": "1"})).is_error)
        await session.call_tool("close_session", {})
        errors.append((await session.call_tool("python", {"code": "1"})).is_error)
        return {
            "tools": tools,
            "outputs": outputs,
            "reward": verdict.structured_content["reward"],
            "errors": errors,
        }


def main() -> None:
    server, thread, url, app = _serve()
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            created = http.post("/v1/sessions", json={"item": ITEM, "tools": ["python"]}).json()
        report = {
            "sdk": version("mcp"),
            "header": asyncio.run(_rollout(url, created["session_id"])),
            "mcp_only": asyncio.run(_rollout(url, None)),
            "open_after": app.state.engine.sessions.open_count,
        }
    finally:
        server.should_exit = True
        thread.join(60)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
