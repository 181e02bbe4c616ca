"""Run verifiers' own eval (`run_eval`: its env, rollouts, `null` harness, MCP tools and scoring) over
Assay items against a stub model; print one JSON summary per rollout. Runs in .venv-verifiers (verifiers
cannot share the test environment), started by tests/integrations/test_verifiers_env.py.

The stub model is an OpenAI-compatible server (chat completions, streamed or not) answering from a
script: for each item's prompt, the assistant turns in order, the turn picked by how many assistant
messages the request already holds. Each turn is `{"content": text}`, `{"tool_calls": [{"name",
"arguments"}]}` (arguments as the model's JSON text), or `{"status": code}`: the model fails with it.

Usage: python verifiers_run.py ASSAY_URL ITEMS_JSONL SCRIPT_JSON WORKDIR MAX_CONCURRENT
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TASKSET_MODULE = """from assay.integrations.verifiers_env import AssayEnv, AssayTaskset

__all__ = ["AssayEnv", "AssayTaskset"]
"""


def _turn(script: dict[str, list[dict[str, Any]]], messages: list[dict[str, Any]]) -> dict[str, Any]:
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    done = sum(m["role"] == "assistant" for m in messages)
    turns = script[prompt]
    return turns[min(done, len(turns) - 1)]


def _message(turn: dict[str, Any], step: int) -> dict[str, Any]:
    if "tool_calls" not in turn:
        return {"role": "assistant", "content": turn["content"]}
    calls = [
        {
            "id": f"call_{step}_{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": c["arguments"]},
        }
        for i, c in enumerate(turn["tool_calls"])
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _chunks(message: dict[str, Any], finish: str) -> list[dict[str, Any]]:
    delta = dict(message)
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(delta["tool_calls"])]
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    base = {"id": "stub", "object": "chat.completion.chunk", "created": 0, "model": "stub"}
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": usage},
    ]


def stub_model(script: dict[str, list[dict[str, Any]]]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(
                json.dumps({"object": "list", "data": [{"id": "stub", "object": "model"}]}).encode(),
                "application/json",
            )

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            turn = _turn(script, request["messages"])
            if "status" in turn:
                self.send_error(turn["status"], "the stub model fails here")
                return
            message = _message(turn, len(request["messages"]))
            finish = "tool_calls" if "tool_calls" in message else "stop"
            if request.get("stream"):
                events = "".join(f"data: {json.dumps(c)}\n\n" for c in _chunks(message, finish))
                self._send((events + "data: [DONE]\n\n").encode(), "text/event-stream")
                return
            answer = {
                "id": "stub", "object": "chat.completion", "created": 0, "model": "stub",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }  # fmt: skip
            self._send(json.dumps(answer).encode(), "application/json")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def summary(trace: Any) -> dict[str, Any]:
    tool_messages = [m for m in trace.messages if m.role == "tool"]
    return {
        "id": trace.task.data.id,
        "ok": trace.ok,
        "rewards": {k: (None if r is None else r.value) for k, r in trace.rewards.items()},
        "metrics": trace.metrics,
        "errors": [f"{e.type}: {e.message}" for e in trace.errors],
        "session_id": trace.state.session_id,
        "tool_outputs": [str(m.content) for m in tool_messages],
        "last_reply": trace.last_reply,
    }


def main() -> None:
    url, items, script_path, workdir, concurrent = sys.argv[1:6]
    work = Path(workdir)
    (work / "assay_items.py").write_text(TASKSET_MODULE)
    sys.path.insert(0, str(work))  # verifiers loads a taskset by the id of a top-level module
    model = stub_model(json.loads(Path(script_path).read_text()))

    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    config = EvalConfig.model_validate(
        {
            "env": {"taskset": {"id": "assay_items", "items": items, "task": {"url": url}}},
            "model": "stub",
            "client": {"base_url": f"http://127.0.0.1:{model.server_port}/v1", "api_key_var": "STUB_KEY"},
            "max_concurrent": int(concurrent),
            "push": False,
            "rich": None,
            "output_dir": str(work / "out"),
        }
    )
    episodes = asyncio.run(run_eval(config))
    model.shutdown()
    for episode in episodes:
        for trace in episode.traces:
            print(json.dumps(summary(trace)))


if __name__ == "__main__":
    main()
