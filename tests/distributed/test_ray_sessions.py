"""Sessions under `assay serve --ray`, on a real local Ray: spread over session-holder actors, every call
reaching the holder named in the id, verify scored by the deployments as /v1/rewards is, and a killed
holder ending exactly its own sessions with `session_gone` while the others carry on.

One local Ray instance and one application serve the module (the CPU scorers, the ingress and two
holders); the sessions run the real python tool in bubblewrap sandboxes.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator

import httpx
import psutil
import pytest
from assay_testing import bwrap_works, free_port
from session_testing import session_settings

from assay.distributed.faults import require_ray

try:  # without Ray the requires_ray marker skips these locally and fails them in CI
    require_ray()

    import ray
    from ray import serve
except ImportError:
    pass

from assay.distributed.deployments import deploy
from assay.distributed.sessions import NAMESPACE, holder_of
from assay.settings import Settings

pytestmark = [pytest.mark.slow, pytest.mark.requires_ray, pytest.mark.timeout(600)]

ITEM = {"id": "q1", "task": "math", "prompt": "What is 6 * 7?", "reference": "42"}
APP = "assay-sessions-test"


def _until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Bounded polling of a cluster-side condition (there is no event to wait on across processes)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s}s waiting for {what}"
        time.sleep(0.05)  # sleep-ok: polling interval of a bounded wait, not synchronisation by delay


@pytest.fixture(scope="module")
def settings() -> Settings:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    base = session_settings(max_open=3)
    lean = {"replicas": 0}
    ray_section = {
        "app_name": APP,
        "proxy_location": "HeadOnly",
        "scorers": {"replicas": 1, "num_cpus": 0, "workers": 1},
        "code": lean,
        "judge": lean,
        "prm": lean,
        "sessions": {"holders": 2, "reply_margin_s": 10},
    }
    return base.model_copy(update={"port": free_port(), "ray": type(base.ray).model_validate(ray_section)})


@pytest.fixture(scope="module")
def app(settings: Settings) -> Iterator[str]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        deploy(settings, http=True)
        url = f"http://127.0.0.1:{settings.port}"
        _until(lambda: _answers(url), 60, "Serve's HTTP proxy")
        yield url
    finally:
        serve.shutdown()
        ray.shutdown()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def http(app: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=app, timeout=90) as client:
        yield client


def _open(http: httpx.Client) -> str:
    response = http.post("/v1/sessions", json={"item": ITEM, "tools": ["python"]})
    assert response.status_code == 201, response.text
    return str(response.json()["session_id"])


def _run(http: httpx.Client, sid: str, code: str) -> httpx.Response:
    return http.post(f"/v1/sessions/{sid}/step", json={"tool": "python", "arguments": {"code": code}})


def _gone(response: httpx.Response) -> str:
    assert response.status_code in (404, 410), response.text
    error = response.json()["error"]
    assert error["type"] == "session_gone"
    return str(error["reason"])


def _holder_pid(sid: str) -> int:
    name = holder_of(sid)
    assert name is not None
    return int(ray.get(ray.get_actor(name, namespace=NAMESPACE).pid.remote(), timeout=30))


def test_sessions_spread_over_holders_and_each_call_reaches_its_own(http: httpx.Client) -> None:
    ids = [_open(http) for _ in range(4)]
    assert len({holder_of(sid) for sid in ids}) == 2  # two holders, two sessions each
    assert len({_holder_pid(sid) for sid in ids}) == 2  # two actor processes, none of them the ingress
    for i, sid in enumerate(ids):
        assert _run(http, sid, f"x = {i}").json()["status"] == "ok"
    calls = [{"session_id": sid, "tool": "python", "arguments": {"code": "x"}} for sid in ids]
    batch = http.post("/v1/sessions/step", json={"calls": calls})
    assert batch.status_code == 200
    assert [r["observation"] for r in batch.json()["results"]] == [f"{i}\n" for i in range(4)]
    assert "assay_sessions_open 4.0" in http.get("/metrics").text
    verdict = http.post(f"/v1/sessions/{ids[0]}/verify", json={"response": "so \\boxed{42}"}).json()
    scored = http.post("/v1/rewards", json={"items": [{**ITEM, "response": "so \\boxed{42}"}]}).json()
    assert verdict["details"].pop("session")["steps"] == 2
    (expected,) = scored["results"]
    for result in (verdict, expected):
        result.pop("elapsed_ms")
    assert verdict == expected and verdict["reward"] == 1.0
    for sid in ids:
        assert http.delete(f"/v1/sessions/{sid}").status_code == 204
    assert _gone(_run(http, ids[0], "x")) == "deleted"
    assert "never created" in _gone(_run(http, "s-00000000-" + "0" * 24 + "0", "x"))


def test_a_killed_holder_ends_exactly_its_sessions(http: httpx.Client) -> None:
    ids = [_open(http) for _ in range(4)]
    doomed_holder = holder_of(ids[0])
    doomed = [sid for sid in ids if holder_of(sid) == doomed_holder]
    kept = [sid for sid in ids if holder_of(sid) != doomed_holder]
    assert len(doomed) == len(kept) == 2
    for sid in ids:
        assert _run(http, sid, f"mark = {sid!r}").json()["status"] == "ok"
    pid = _holder_pid(doomed[0])
    sandboxes = {p.pid for p in psutil.Process(pid).children(recursive=True)}
    assert sandboxes, "the holder runs its sessions' sandboxes"
    os.kill(pid, signal.SIGKILL)
    started = time.monotonic()
    calls = [{"session_id": sid, "tool": "python", "arguments": {"code": "mark"}} for sid in ids]
    results = http.post("/v1/sessions/step", json={"calls": calls}).json()["results"]
    assert time.monotonic() - started < 30  # a dead holder is told at once, not waited for
    for sid, result in zip(ids, results, strict=True):
        if sid in kept:
            assert (result["status"], result["observation"]) == ("ok", f"{sid!r}\n")
        else:
            assert result["error"]["type"] == "session_gone"
            assert "holder" in result["error"]["reason"]
    for sid in doomed:
        assert "was lost" in _gone(_run(http, sid, "mark"))
        assert "was lost" in _gone(http.post(f"/v1/sessions/{sid}/verify", json={"response": "1"}))
        assert http.delete(f"/v1/sessions/{sid}").status_code == 204
    _until(lambda: not any(psutil.pid_exists(p) for p in sandboxes), 30, "the lost holder's sandboxes")
    fresh = [_open(http) for _ in range(2)]  # new sessions land on live holders (the dead one replaced)
    assert all(_run(http, sid, "6 * 7").json()["observation"] == "42\n" for sid in fresh)
    assert doomed_holder not in {holder_of(sid) for sid in fresh}
    for sid in [*kept, *fresh]:
        assert _run(http, sid, "1").json()["status"] == "ok"
        http.delete(f"/v1/sessions/{sid}")


def test_deleting_the_application_ends_its_holders(http: httpx.Client, settings: Settings) -> None:
    sid = _open(http)
    pid = _holder_pid(sid)
    serve.delete(settings.ray.app_name)

    def holders_left() -> list[str]:
        named = ray.util.list_named_actors(all_namespaces=True)
        return [a["name"] for a in named if a["namespace"] == NAMESPACE]

    _until(lambda: not holders_left(), 60, "the session holders to end")
    _until(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie", 30, "its process")
