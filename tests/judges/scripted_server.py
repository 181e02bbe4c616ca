"""A real HTTP server on loopback that speaks OpenAI chat completions and plays scripted judges.

The request's `model` picks the script, so one server plays every judge:

    fair        grades content: an answer containing "correct" is good (pointwise 5 vs 2; pairwise wins)
    first       always prefers the answer shown first ([[A]]); pointwise always 3
    longer      prefers the longer answer; pointwise score grows with length (1 + len // 100, max 5)
    slow        never answers (until the server stops)
    flaky       answers 429 with Retry-After: 0 to its first `flaky_failures` requests, then like `fair`
    garbage     answers text without a score or verdict
    notjson     answers HTTP 200 with a body that is not JSON
    broken      always answers 500
    ratelimit-N always answers 429 with Retry-After: N
    echo-auth   answers 401 echoing the Authorization header it received (a leaky backend)
    fixed-N     pointwise [RESULT] N, with all probability on N
    unsure      pointwise text [RESULT] 4, logprobs 4: 0.5, 2: 0.5 (G-Eval gives 3)
    seeded      pointwise score 1 + seed % 5
    equiv       second opinion: [[YES]] when candidate and gold are the same number, else [[NO]]
    lenient     second opinion: "equivalent" to anything ({"equivalent": "yes"} when a response_format
                asks for JSON, else [[YES]]): the worst judge, to measure what the second opinion lets by
    lenient-prose  second opinion in prose, as SmolLM2-135M answered: "they are mathematically equivalent"
    count       like `fixed-3`, after a short pause, recording how many requests were in flight at once
    json        like `fair`, answering the JSON the request's `response_format` asks for
    prose       like `fair` in pairwise, but in prose as small models write it ("Response B is better.")
    paced       like `fair`, after 0.3 s (a slow but healthy backend)
    obedient    obeys instructions in the texts it grades and is pleased by master keys (obedient.py)

Logprobs (`logprobs: true`) come back in the chat-completions format, one token per digit and one per
run of other characters, so the tokens add up to the text as they do from real servers. Every request is
recorded (`requests`) with its body and headers.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
from fractions import Fraction
from typing import Any

from judges import obedient
from judges.obedient import section as _section


def _tokens(text: str, score_probs: dict[str, float] | None) -> list[dict[str, Any]]:
    """Chat-completions logprobs: digits are their own tokens; the last digit carries `score_probs`."""
    pieces = re.findall(r"\d|\D+", text)
    last_digit = max((i for i, p in enumerate(pieces) if p.isdigit()), default=-1)
    tokens = []
    for i, piece in enumerate(pieces):
        if i == last_digit and score_probs:
            top = [{"token": tok, "logprob": math.log(p)} for tok, p in score_probs.items()]
            top.append({"token": " the", "logprob": math.log(0.001)})
        else:
            top = [{"token": piece, "logprob": -0.01}]
        tokens.append({"token": piece, "logprob": top[0]["logprob"], "top_logprobs": top})
    return tokens


def _number(text: str) -> Fraction | None:
    try:
        return Fraction(text.strip().replace("\\frac{", "").replace("}{", "/").rstrip("}"))
    except (ValueError, ZeroDivisionError):
        return None


class ScriptedJudges:
    """The server; `start()` returns once it accepts connections, `stop()` ends it and its handlers."""

    def __init__(self, flaky_failures: int = 2) -> None:
        self.requests: list[dict[str, Any]] = []
        self.flaky_failures = flaky_failures
        self.in_flight = 0
        self.max_in_flight = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scripted-judges", daemon=True)
        self._server: asyncio.Server | None = None
        self._stopping: asyncio.Event | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedJudges:
        self._thread.start()
        if not self._ready.wait(timeout=10):  # bounded: a loopback bind takes milliseconds
            raise RuntimeError("the scripted judge server did not start")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._shutdown)
        self._thread.join(timeout=10)
        self._loop.close()

    def reset(self) -> None:
        self.requests.clear()
        self.max_in_flight = 0

    def requests_for(self, model: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["body"].get("model") == model]

    # -- server loop -------------------------------------------------------------------------------
    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stopping.wait()
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    def _shutdown(self) -> None:
        assert self._stopping is not None
        self._stopping.set()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            while True:  # keep-alive: one request after another on the connection
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {
                    k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status, extra, payload = await self._answer(lines[0], headers, body)
                writer.write(_http(status, extra, payload))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._handlers.discard(task)
            writer.close()

    async def _answer(
        self, request_line: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        if not request_line.startswith("POST /v1/chat/completions "):
            return 404, {}, b'{"error": "not found"}'
        body = json.loads(raw)
        self.requests.append({"body": body, "headers": headers})
        model = str(body.get("model"))
        if model == "slow":
            assert self._stopping is not None
            await self._stopping.wait()
            return 503, {}, b"{}"
        if model == "flaky" and len(self.requests_for("flaky")) <= self.flaky_failures:
            return 429, {"Retry-After": "0"}, b'{"error": "rate limited"}'
        if model.startswith("ratelimit-"):
            return 429, {"Retry-After": model.removeprefix("ratelimit-")}, b'{"error": "slow down"}'
        if model == "broken":
            return 500, {}, b'{"error": "internal"}'
        if model == "notjson":
            return 200, {}, b"<html>gateway says hi</html>"
        if model == "echo-auth":
            return 401, {}, json.dumps({"error": f"bad key in {headers.get('authorization')}"}).encode()
        if model == "paced":
            await asyncio.sleep(0.3)  # simulated latency of a slow, healthy backend
        if model == "count":
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            await asyncio.sleep(0.02)  # simulated latency, so that requests overlap
            self.in_flight -= 1
        text, probs = self._judge(model, body)
        return 200, {}, json.dumps(_completion(body, text, probs)).encode()

    def _judge(self, model: str, body: dict[str, Any]) -> tuple[str, dict[str, float] | None]:
        user = body["messages"][-1]["content"]
        if model == "obedient":
            return obedient.answer(user), None
        if model == "garbage":
            return "What a lovely answer! I would give it a thumbs up.", None
        if model == "lenient":
            return ('{"equivalent": "yes"}' if body.get("response_format") else "[[YES]]"), None
        if model == "lenient-prose":
            return "The candidate answer and the gold answer are mathematically equivalent.", None
        if model == "equiv":
            value = _number(_section(user, "Candidate answer") or "")
            same = value is not None and value == _number(_section(user, "Gold answer") or "")
            return ("[[YES]]" if same else "[[NO]]"), None
        first, second = _section(user, "Answer A"), _section(user, "Answer B")
        if model == "json" and body.get("response_format"):
            return _json_answer(first, second, _section(user, "Response")), None
        if first is not None and second is not None:
            return _pairwise(model, first, second), None
        response = _section(user, "Response") or ""
        return _pointwise(model, response, body.get("seed"))


def _json_answer(first: str | None, second: str | None, response: str | None) -> str:
    if first is not None and second is not None:
        good_a, good_b = "correct" in first, "correct" in second
        verdict = "tie" if good_a == good_b else ("A" if good_a else "B")
        return json.dumps({"verdict": verdict})
    return json.dumps({"score": 5 if "correct" in (response or "") else 2})


def _pairwise(model: str, first: str, second: str) -> str:
    if model == "first":
        return "Answer A is clearly better. [[A]]"
    if model == "longer":
        return "The more detailed answer wins. " + ("[[A]]" if len(first) > len(second) else "[[B]]")
    if model == "prose":
        good_a, good_b = "correct" in first, "correct" in second
        return (
            "Both are equally good."
            if good_a == good_b
            else ("A is better" if good_a else "Response B is better.")
        )
    good_a, good_b = "correct" in first, "correct" in second
    verdict = "[[C]]" if good_a == good_b else ("[[A]]" if good_a else "[[B]]")
    return f"Comparing content. {verdict}"


def _pointwise(model: str, response: str, seed: Any) -> tuple[str, dict[str, float] | None]:
    if model.startswith("fixed-"):
        score = model.removeprefix("fixed-")
        return f"Feedback: fixed.\n[RESULT] {score}", {score: 1.0}
    if model == "unsure":
        return "Feedback: undecided between 4 and 2.\n[RESULT] 4", {"4": 0.5, " 2": 0.5}
    if model == "seeded":
        score = str(1 + int(seed or 0) % 5)
        return f"Feedback: a sample.\n[RESULT] {score}", {score: 1.0}
    if model == "first":
        return "Feedback: average.\n[RESULT] 3", {"3": 1.0}
    if model == "longer":
        score = str(min(5, 1 + len(response) // 100))
        return f"Feedback: thorough answers are best.\n[RESULT] {score}", {score: 1.0}
    if model == "count":
        return "Feedback: fine.\n[RESULT] 3", {"3": 1.0}
    score = "5" if "correct" in response else "2"
    return f"Feedback: judged on content.\n[RESULT] {score}", {score: 1.0}


def _completion(body: dict[str, Any], text: str, probs: dict[str, float] | None) -> dict[str, Any]:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": "stop",
        "logprobs": None,
    }
    if body.get("logprobs"):
        choice["logprobs"] = {"content": _tokens(text, probs)}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": body.get("model"),
        "choices": [choice],
    }


_REASONS = {
    200: "OK",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Error",
    503: "Busy",
}


def _http(status: int, headers: dict[str, str], payload: bytes) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append(f"Content-Length: {len(payload)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload
