"""TRL, verl, OpenRLHF and slime adapters, each against a live Assay service on loopback."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from assay.client import AssayClient
from assay.integrations import clients, openrlhf, slime, verl
from assay.integrations.clients import RewardUnavailable, shared_async_client, shared_client
from assay.integrations.trl import AssayReward


@pytest.fixture
def server(assay_service: str) -> Any:
    return SimpleNamespace(url=assay_service)


def test_trl_reward_func_scores_plain_completions(server: Any) -> None:
    reward = AssayReward(server.url)
    prompts = ["What is 2+2?", "What is 3+3?"]
    completions = ["It is \\boxed{4}.", "I think 5"]
    assert reward(prompts=prompts, completions=completions, answer=["4", "6"]) == [1.0, 0.0]
    assert reward.__name__ == "assay_math"


def test_trl_reward_func_reads_conversational_completions(server: Any) -> None:
    reward = AssayReward(server.url, reference_key="solution")
    prompts = [[{"role": "user", "content": "2+2?"}]]
    completions = [[{"role": "assistant", "content": "\\boxed{4}"}]]
    assert reward(prompts, completions, solution=[4]) == [1.0]


def test_trl_reward_func_returns_none_for_unscored_samples(server: Any) -> None:
    # The `buggy` test plugin's scorer raises: status error. TRL skips None instead of training on 0.
    reward = AssayReward(server.url, task="buggy")
    assert reward(["p"], ["x"], answer=["x"]) == [None]


def test_trl_reward_func_names_the_missing_column(server: Any) -> None:
    with pytest.raises(KeyError, match="reference_key"):
        AssayReward(server.url)(["p"], ["x"])


def test_verl_compute_score(server: Any) -> None:
    good = verl.compute_score("openai/gsm8k", "so #### \\boxed{72}", "72", url=server.url)
    assert good == {"score": 1.0, "acc": True, "assay_status": "ok"}
    bad = verl.compute_score("openai/gsm8k", "\\boxed{71}", "72", {"split": "train"}, url=server.url)
    assert bad["score"] == 0.0 and bad["acc"] is False


def test_verl_compute_score_reads_the_url_from_the_environment(server: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("ASSAY_URL", server.url)
    assert verl.compute_score("lighteval/MATH", "\\boxed{\\frac12}", "0.5")["score"] == 1.0


def test_verl_batch_and_unscored_items_raise(server: Any) -> None:
    scores = verl.compute_score_batch(
        ["a", "b"], ["\\boxed{1}", "\\boxed{3}"], ["1", "2"], None, url=server.url
    )
    assert [s["score"] for s in scores] == [1.0, 0.0]
    with pytest.raises(RewardUnavailable, match="error"):
        verl.compute_score("x", "1", "1", {"assay_task": "buggy"}, url=server.url)


def test_openrlhf_request_shape_is_served_by_get_reward(server: Any) -> None:
    # As OpenRLHF sends it: query = decoded prompt + response with special tokens, prompts, labels.
    prompts = ["<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n"] * 2
    responses = ["The answer is \\boxed{42}<|im_end|>", "\\boxed{41}<|im_end|>"]
    queries = [p + r for p, r in zip(prompts, responses, strict=True)]
    body = openrlhf.request_body(queries, prompts, ["42", "42"])
    assert set(body) == {"query", "prompts", "labels"}
    answer = httpx.post(server.url + "/get_reward", json=body, timeout=60).json()
    assert answer["rewards"] == [1.0, 0.0]
    assert openrlhf.remote_reward(queries, prompts, ["42", "42"], url=server.url) == [1.0, 0.0]
    with pytest.raises(RewardUnavailable, match=r"no rewards: 1 of 2 items .*#1 invalid"):
        openrlhf.remote_reward(queries, prompts, ["42", "\\frac{"], url=server.url)


def test_openrlhf_refuses_rather_than_scoring_an_unscorable_item_as_zero(live_server: Any) -> None:
    server = live_server(openrlhf_task="buggy")
    with pytest.raises(RewardUnavailable, match="503"):
        openrlhf.remote_reward(["q a"], ["q "], ["a"], url=server.url, timeout_s=30)


def test_slime_custom_reward_functions(server: Any) -> None:
    args = SimpleNamespace(assay_url=server.url)
    samples = [
        SimpleNamespace(prompt="1+1?", response="\\boxed{2}", label="2"),
        SimpleNamespace(prompt="1+2?", response="\\boxed{4}", label="3"),
    ]
    assert asyncio.run(slime.reward(args, samples[0])) == 1.0
    assert asyncio.run(slime.reward(args, samples, evaluation=False)) == [1.0, 0.0]  # --group-rm
    broken = SimpleNamespace(assay_url=server.url, assay_task="buggy")
    with pytest.raises(RewardUnavailable):
        asyncio.run(slime.reward(broken, samples[0]))


def test_shared_client_is_one_per_url() -> None:
    assert shared_client("http://a.test:1") is shared_client("http://a.test:1")
    assert isinstance(shared_client("http://b.test:1"), AssayClient)


def test_shared_client_is_one_per_url_across_threads() -> None:
    # verl's reward loop calls compute_score from several executor threads at once.
    start = threading.Barrier(8)

    def first_call() -> AssayClient:
        start.wait()
        return shared_client("http://threads.test:1")

    with ThreadPoolExecutor(8) as pool:
        clients = list(pool.map(lambda _: first_call(), range(8)))
    assert all(c is clients[0] for c in clients)


class _EnteredLock:
    """A lock that counts who has come to it, so a test knows every caller is waiting on it."""

    def __init__(self) -> None:
        self.lock, self.came, self.entered = threading.Lock(), threading.Condition(), 0

    def __enter__(self) -> None:
        with self.came:
            self.entered += 1
            self.came.notify_all()
        self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_a_servers_task_listing_is_asked_once_while_many_rollouts_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rollouts starting at once (a verifiers or OpenRLHF batch, TRL's environments) ask `GET /v1/tasks`
    once: the others wait for that answer. A failed ask is not kept: the next caller asks again."""
    url, callers = "http://listing.test:1", 8
    asked: list[str] = []
    answer = threading.Event()

    def ask(asked_url: str) -> dict[str, Any]:
        asked.append(asked_url)
        if len(asked) == 1:
            raise clients.UnreachableError("cannot reach Assay")
        answer.wait(30)
        return {"tasks": [{"name": "sql", "tools": ["sql"]}], "tools": []}

    entered = _EnteredLock()
    monkeypatch.setattr(clients, "_ask_tasks", ask)
    monkeypatch.setitem(clients._asking, url, entered)
    monkeypatch.delitem(clients._listings, url, raising=False)
    with pytest.raises(clients.UnreachableError):
        clients.listed_tasks(url)
    with ThreadPoolExecutor(callers) as pool:
        running = [pool.submit(clients.listed_tasks, url) for _ in range(callers)]
        with entered.came:  # every caller is at the lock (one of them asking) before the answer comes
            assert entered.came.wait_for(lambda: entered.entered == 1 + callers, timeout=30)
        answer.set()
        listed = [future.result(timeout=30) for future in running]
    assert asked == [url, url] and all(entry is listed[0] for entry in listed)
    assert asyncio.run(clients.alisted_tasks(url)) is listed[0]  # kept: no thread, no ask
    assert clients.session_tools(listed[0], None, "sql") == ["sql"]
    monkeypatch.delitem(clients._listings, url)


def test_slime_reuses_one_client_per_event_loop_and_batches_concurrent_samples(server: Any) -> None:
    # It built a client per sample (26.5 ms each, a new connection each; issue 31).
    args = SimpleNamespace(assay_url=server.url)
    samples = [SimpleNamespace(prompt=f"{i}+0?", response=f"\\boxed{{{i}}}", label=str(i)) for i in range(60)]

    async def main() -> tuple[list[Any], AssayClient, AssayClient]:
        rewards = await asyncio.gather(*(slime.reward(args, s) for s in samples))
        first = shared_async_client(server.url)
        await slime.reward(args, samples[0])
        return rewards, first, shared_async_client(server.url)

    rewards, first, again = asyncio.run(main())
    assert rewards == [1.0] * 60 and first is again
    assert first._coalescer is not None and first._coalescer.calls == 61
    assert first._coalescer.batches <= 4  # 60 concurrent samples went out together, not one by one
    asyncio.run(_other_loop_gets_its_own(first, server.url))


async def _other_loop_gets_its_own(first: AssayClient, url: str) -> None:
    assert shared_async_client(url) is not first  # an async pool belongs to one event loop


def test_verl_compute_score_async_is_awaited_by_verls_reward_loop(server: Any) -> None:
    import inspect

    # verl's reward managers await a coroutine function on their loop instead of a thread per sample.
    assert inspect.iscoroutinefunction(verl.compute_score_async)

    async def main() -> list[dict[str, Any]]:
        calls = [
            verl.compute_score_async("gsm8k", f"\\boxed{{{i}}}", str(i), url=server.url) for i in range(20)
        ]
        return await asyncio.gather(*calls)

    scores = asyncio.run(main())
    assert [s["score"] for s in scores] == [1.0] * 20 and all(s["assay_status"] == "ok" for s in scores)
