"""`POST /run_code` answers like SandboxFusion, through the real app."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.sandbox import lookup
from assay.sandbox.bwrap import find_bwrap
from assay.sandbox.runtime import default_prefix, prefix_packages
from assay.settings import CodeSettings, Settings

HAS_CPP = bool((lang := lookup("cpp")) and lang.available())
needs_cpp = pytest.mark.skipif(not HAS_CPP, reason="g++ not installed")


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    try:
        find_bwrap()
    except Exception:
        pytest.skip("bubblewrap cannot run here")
    settings = Settings(workers=1, code=CodeSettings(slots=1, tmpfs_mb=64, processes=32, memory_mb=256))
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_python_success(client: TestClient) -> None:
    body = client.post(
        "/run_code", json={"code": "print(input()[::-1])", "language": "python", "stdin": "abc"}
    )
    assert body.status_code == 200
    data = body.json()
    assert data["status"] == "Success"
    assert data["run_result"]["status"] == "Finished"
    assert data["run_result"]["stdout"] == "cba\n"
    assert data["run_result"]["return_code"] == 0
    assert data["compile_result"] is None


def test_runtime_error_is_failed_with_return_code(client: TestClient) -> None:
    data = client.post("/run_code", json={"code": "raise SystemExit(3)", "language": "python"}).json()
    assert data["status"] == "Failed" and data["run_result"]["return_code"] == 3


def test_timeout_is_time_limit_exceeded(client: TestClient) -> None:
    data = client.post("/run_code", json={"code": "while True: pass", "run_timeout": 1}).json()
    assert data["status"] == "Failed" and data["run_result"]["status"] == "TimeLimitExceeded"


@needs_cpp
def test_cpp_compile_error(client: TestClient) -> None:
    data = client.post("/run_code", json={"code": "int main( {", "language": "cpp"}).json()
    assert data["status"] == "Failed"
    assert data["compile_result"]["status"] == "Finished" and data["compile_result"]["return_code"] != 0
    assert data["run_result"] is None


@needs_cpp
def test_cpp_runs(client: TestClient) -> None:
    code = '#include <cstdio>\nint main(){int a;scanf("%d",&a);printf("%d\\n",a*2);}'
    data = client.post("/run_code", json={"code": code, "language": "cpp", "stdin": "21"}).json()
    assert data["status"] == "Success" and data["run_result"]["stdout"] == "42\n"
    assert data["compile_result"]["status"] == "Finished"


def test_unknown_language_is_422_listing_the_supported_ones(client: TestClient) -> None:
    response = client.post("/run_code", json={"code": "x", "language": "cobol"})
    assert response.status_code == 422
    message = response.json()["error"]["message"]
    assert "cobol" in message and all(name in message for name in ("python", "cpp", "javascript", "java"))


def test_run_timeout_is_wall_clock(client: TestClient) -> None:
    sleeper = "import time\ntime.sleep(3)\nprint('late')"  # sleep-ok: the sandboxed program sleeps
    data = client.post("/run_code", json={"code": sleeper, "run_timeout": 1}).json()
    assert data["run_result"]["status"] == "TimeLimitExceeded" and data["status"] == "Failed"
    assert 1.0 <= data["run_result"]["execution_time"] < 3.0
    quick = client.post("/run_code", json={"code": sleeper.replace("3", "0.2"), "run_timeout": 2}).json()
    assert quick["status"] == "Success" and quick["run_result"]["stdout"] == "late\n"


def test_any_positive_memory_limit_is_taken(client: TestClient) -> None:
    for memory in (64, 16384):  # up to the bound, beyond an item option's range
        data = client.post("/run_code", json={"code": "print(1)", "memory_limit_MB": memory}).json()
        assert data["status"] == "Success", data


def test_files_are_refused(client: TestClient) -> None:
    data = client.post("/run_code", json={"code": "x", "files": {"a.txt": "eA=="}}).json()
    assert data["status"] == "Failed" and "files" in data["message"]


def test_tasks_list_what_the_code_runtime_offers(client: TestClient) -> None:
    tasks = {task["name"]: task for task in client.get("/v1/tasks").json()["tasks"]}
    languages = tasks["code"]["runtime"]["languages"]
    assert languages["python"]["version"].startswith("Python 3")
    # No prefix configured: the default sandbox runtime (the one location every surface reads, issue 43)
    assert languages["python"]["packages"] == prefix_packages(default_prefix())
    assert tasks["math"]["runtime"] is None
    if HAS_CPP:
        assert languages["cpp"]["version"] and "c++" in languages["cpp"]["aliases"]


def test_code_items_score_through_the_rewards_endpoint(client: TestClient) -> None:
    item = {"task": "code", "response": "```python\nprint(1)\n```", "tests": [{"stdin": "", "stdout": "1"}]}
    data = client.post("/v1/rewards", json={"items": [item]}).json()
    assert data["results"][0]["status"] == "ok" and data["results"][0]["reward"] == 1.0


def test_overload_is_504_with_retry_after_which_sandboxfusion_clients_retry() -> None:
    try:
        find_bwrap()
    except Exception:
        pytest.skip("bubblewrap cannot run here")
    settings = Settings(workers=1, code=CodeSettings(slots=1, max_waiting=0, tmpfs_mb=32, processes=32))
    with TestClient(create_app(settings)) as busy:
        gates = busy.app.state.engine._runner.gates  # type: ignore[attr-defined]

        async def take_the_slot() -> None:  # on the app's loop, where its gates live
            await gates("sandbox").acquire("someone else", 1)

        async def give_it_back() -> None:
            gates("sandbox").release()

        assert busy.portal is not None
        busy.portal.call(take_the_slot)
        try:  # the only slot is taken and max_waiting=0: refused at once at the one queue
            response = busy.post("/run_code", json={"code": "print(1)"})
        finally:
            busy.portal.call(give_it_back)
        assert busy.post("/run_code", json={"code": "print(2)"}).json()["status"] == "Success"
    assert response.status_code == 504  # verl retries 504 only; a 429 would score the program as failed
    assert response.headers["Retry-After"]
    assert response.json()["error"]["type"] == "busy"
    assert "sandbox busy" in response.json()["error"]["message"]


def test_null_limits_mean_the_server_defaults(client: TestClient) -> None:
    # verl sends `memory_limit_MB: null` by default; SandboxFusion's server reads it as its default.
    body = {"code": "print(7)", "memory_limit_MB": None, "run_timeout": None, "compile_timeout": None}
    data = client.post("/run_code", json=body).json()
    assert data["status"] == "Success" and data["run_result"]["stdout"] == "7\n"
