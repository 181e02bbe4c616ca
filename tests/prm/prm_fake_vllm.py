"""A scripted stand-in for `vllm serve --runner pooling`: real HTTP on 127.0.0.1, vLLM 0.32's wire format.

The shapes were taken from a real vLLM 0.32 CPU server serving tests/prm/tiny_prm.py's PRM:
- `POST /pooling` -> `{"id", "object": "list", "created", "model", "data": [{"index": 0, "object": "pooling",
  "data": ROWS}], "usage": {...}}`, ROWS one `[p0, p1]` per step tag (pooling at step tags) or per token
  (pooling at every token); with an unknown step tag id, ROWS is `[]` and the status is still 200.
- `POST /tokenize` -> `{"count", "max_model_len", "tokens": [...], "token_strs": null}`.
The fake tokeniser is one token per character (code point + 10), with `<extra_0>` as token 3 and the
ChatML specials as 0..2, so that tests can compute which rows sit at the tags.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARKER, MARKER_ID = "<extra_0>", 3
SPECIALS = {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2, MARKER: MARKER_ID}


def render(messages: list[dict[str, str]]) -> str:
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)


def tokenize(text: str) -> list[int]:
    tokens: list[int] = []
    i = 0
    while i < len(text):
        for special, token in SPECIALS.items():
            if text.startswith(special, i):
                tokens.append(token)
                i += len(special)
                break
        else:
            tokens.append(ord(text[i]) + 10)
            i += 1
    return tokens


def probability(position: int) -> float:
    return ((position * 37) % 97 + 1) / 100.0


class FakeVllm:
    """`mode`: per-tag, per-token, empty-rows, empty-data, error-500, too-long, not-json, logits, hang."""

    def __init__(self) -> None:
        self.mode = "per-tag"
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.release = threading.Event()  # frees handlers held by the "hang" mode
        self.last_tokens: list[int] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> FakeVllm:
        self.thread.start()  # the socket is already listening: no need to wait
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)

    # -- answers -------------------------------------------------------------------------------------
    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        self.requests.append((path, body))
        if path == "/tokenize":
            text = body["prompt"] if "prompt" in body else render(body["messages"])
            tokens = tokenize(text)
            return 200, {"count": len(tokens), "max_model_len": 2048, "tokens": tokens, "token_strs": None}
        if path != "/pooling":
            return 404, {"error": {"message": "Not Found", "type": "NotFoundError", "code": 404}}
        return self._pooling(body)

    def _pooling(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.mode == "hang":
            self.release.wait(30)
        if self.mode == "error-500":
            return 500, {"error": {"message": "EngineCore died", "type": "InternalServerError", "code": 500}}
        if self.mode == "too-long":  # vLLM 0.32's answer, verbatim but for the numbers
            message = (
                "This model's maximum context length is 2048 tokens. However, your prompt contains at least "
                "2049 input tokens, which exceeds this limit even without any output tokens. Please reduce "
                "the length of the input prompt. (parameter=input_tokens, value=2049)"
            )
            return 400, {
                "error": {"message": message, "type": "BadRequestError", "param": "input_tokens", "code": 400}
            }
        if self.mode == "not-json":
            return 200, "<html>proxy error</html>"
        tokens = tokenize(render(body["messages"]))
        self.last_tokens = tokens
        rows = [[1 - probability(i), probability(i)] for i in range(len(tokens))]
        if self.mode == "per-tag":
            rows = [row for row, token in zip(rows, tokens, strict=True) if token == MARKER_ID]
        elif self.mode == "empty-rows":
            rows = []
        elif self.mode == "logits":
            rows = [[-3.5, 4.25] for token in tokens if token == MARKER_ID]
        data: list[Any] = (
            [] if self.mode == "empty-data" else [{"index": 0, "object": "pooling", "data": rows}]
        )
        usage = {"prompt_tokens": len(tokens), "total_tokens": len(tokens), "completion_tokens": 0}
        model = body.get("model", "tiny-prm")
        return 200, {
            "id": "pool-1",
            "object": "list",
            "created": 0,
            "model": model,
            "data": data,
            "usage": usage,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                status, answer = fake.answer(self.path, json.loads(self.rfile.read(length)))
                payload = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

        return Handler
