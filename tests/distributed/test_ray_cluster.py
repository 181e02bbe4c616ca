"""Assay on a real multi-node Ray cluster started here (ray.cluster_utils.Cluster): same results as the
single-process Engine, the HTTP contract, a node removed mid-batch, autoscaling, and a clean shutdown.

One cluster serves the whole module (head + 2 worker nodes, 1-2 logical CPUs each) to keep CI time low.
Replica placement is pinned with custom resources: each worker node has one `scorer_slot`, so the two
CPU-scorer replicas sit on different nodes; everything else lives on the head, which is never removed.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from assay.distributed.faults import require_ray

try:  # without Ray the requires_ray marker skips these locally and fails them in CI
    require_ray()  # Ray Serve's import warns about its own pydantic use; warnings are errors here

    import ray
    from ray import serve
    from ray.cluster_utils import Cluster
except ImportError:
    pass

from assay.distributed import reward_handle
from assay.distributed.deployments import deploy
from assay.engine.scoring import Engine
from assay.settings import RaySettings, Settings
from assay.types import Result, Status
from assay.verifiers.sql import devdata

pytestmark = [pytest.mark.slow, pytest.mark.requires_ray, pytest.mark.timeout(600)]

HERE = Path(__file__).parent
CASES = HERE.parent / "cases"
# Fast autoscaling metrics for the scale-out test; read by Ray processes when they start.
RAY_ENV = {
    "RAY_SERVE_HANDLE_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "0.5",
    "RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "0.5",
    "RAY_SERVE_CONTROL_LOOP_INTERVAL_S": "0.2",
    "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")]),
}


def _until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Bounded polling of a cluster-side condition (there is no event to wait on across processes)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s}s waiting for {what}"
        time.sleep(0.05)  # sleep-ok: polling interval of a bounded wait, not synchronisation by delay


class RayCluster:
    """The module's cluster; `shutdown()` stops Serve, Ray and every process the cluster started."""

    def __init__(self) -> None:
        self.saved_env = {k: os.environ.get(k) for k in RAY_ENV}
        os.environ.update(RAY_ENV)
        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 2, "resources": {"head": 100}, "include_dashboard": False},
        )
        self.workers = [self.cluster.add_node(num_cpus=1, resources={"scorer_slot": 1}) for _ in range(2)]
        ray.init(address=self.cluster.address, log_to_driver=False)
        self.cluster.wait_for_nodes()
        self.closed = False

    def processes(self) -> set[int]:
        """Every live process of the cluster: Ray's own (GCS, raylets, monitors) and all below them
        (replicas, their worker pools and sandboxes). Not this process's own multiprocessing helpers."""
        # Ray's programs live in its package (gcs_server, raylet, monitor.py ...); match the program only:
        # this process's own forkserver lists Ray's folders in its sys.path argument.
        ray_roots = [
            p for p in psutil.Process().children() if any("site-packages/ray/" in a for a in p.cmdline()[:3])
        ]
        return {q.pid for p in ray_roots for q in [p, *p.children(recursive=True)]}

    def shutdown(self) -> set[int]:
        """Tear everything down; returns the pids that were running, for the caller to check."""
        started = self.processes()
        if not self.closed:
            self.closed = True
            serve.shutdown()
            ray.shutdown()
            self.cluster.shutdown()
            for key, value in self.saved_env.items():
                os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
        return started


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    instance = RayCluster()
    yield instance
    instance.shutdown()


@pytest.fixture(scope="module")
def sql_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("sqldbs")
    devdata.build(directory)
    return directory


def _port() -> int:
    from assay_testing import free_port

    return free_port()


@pytest.fixture(scope="module")
def settings(sql_dir: Path) -> Settings:
    on_head = {"num_cpus": 0, "resources": {"head": 1}}
    return Settings(
        port=_port(),
        workers=1,
        queue_size=64,
        plugins=["ray_plugins:MarkedGateScorer"],
        sql={"databases": sql_dir, "query_timeout_s": 2.0},
        code={"slots": 2, "tmpfs_mb": 64, "processes": 32, "memory_mb": 256},
        ray={
            "chunk_size": 4,
            "proxy_location": "HeadOnly",
            "ingress_resources": {"head": 1},
            # At most 2 chunks per replica: a 4-chunk batch always reaches both (the node test needs it).
            "scorers": {
                "replicas": 2,
                "num_cpus": 0.5,
                "resources": {"scorer_slot": 1},
                "workers": 1,
                "max_ongoing_requests": 2,
            },
            "code": on_head,
            "judge": on_head,
            "prm": on_head,
        },
    )


@pytest.fixture(scope="module")
def app(cluster: RayCluster, settings: Settings) -> str:
    """The application, deployed once for the module; its HTTP URL."""
    deploy(settings, http=True)
    url = f"http://127.0.0.1:{settings.port}"
    _until(lambda: _answers(url), 60, "Serve's HTTP proxy")
    return url


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _cases(name: str, keep: Callable[[dict[str, Any]], bool], count: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (CASES / name).read_text().splitlines() if line.strip()]
    items = [{k: v for k, v in r.items() if k not in {"label", "category", "note"}} for r in rows if keep(r)]
    return items[:count]


def _mixed_batch() -> list[Any]:
    math = _cases("math.jsonl", lambda r: True, 24)
    sql = _cases("sql.jsonl", lambda r: True, 10)
    code = _cases("code.jsonl", lambda r: r.get("language", "python") == "python", 6)
    odd: list[Any] = [
        {"id": "typo", "task": "maths", "response": "1"},
        {"id": "judge-unset", "task": "judge", "response": "an answer"},
        {"id": "prm-unset", "task": "prm", "response": "a step"},
        "not an item",
    ]
    batch = [*math, *sql, *code, *odd]
    return [batch[i] for i in sorted(range(len(batch)), key=lambda i: (i * 7) % len(batch))]  # interleave


def _comparable(result: Result) -> dict[str, Any]:
    """A result without what depends on timing (elapsed time, per-test wall times of code runs)."""
    data = result.model_dump(mode="json", exclude={"elapsed_ms"})
    if result.task == "code":
        data.pop("details")
    return data


def test_a_mixed_batch_scores_as_the_single_process_engine(app: str, settings: Settings) -> None:
    batch = _mixed_batch()
    with Engine(settings) as engine:
        expected = [_comparable(r) for r in engine.score(batch)]
    handle = reward_handle(settings)
    through_handle = handle(batch)
    with httpx.Client(base_url=app, timeout=120) as http:
        response = http.post("/v1/rewards", json={"items": batch})
    assert response.status_code == 200, response.text
    through_http = [Result.model_validate(r) for r in response.json()["results"]]
    assert [_comparable(r) for r in through_handle] == expected
    assert [_comparable(r) for r in through_http] == expected
    statuses = {r["status"] for r in expected}
    assert {"ok", "invalid"} <= statuses  # the batch really mixes verdicts and unscorable items
    assert {r["task"] for r in expected if r["status"] == "ok"} == {"math", "sql", "code"}
    assert handle.stats.retried == 0


def test_the_verl_and_openrlhf_adapters_score_through_the_handle_when_asked(app: str) -> None:
    from assay.distributed import shared_reward_handle
    from assay.integrations import openrlhf, verl
    from assay.integrations.clients import RewardUnavailable

    shared_reward_handle.cache_clear()  # default settings: attaches to the running "assay" application
    scores = verl.compute_score_batch(["d", "d"], ["so \\boxed{2}", "so \\boxed{3}"], ["2", "2"], ray=True)
    assert [(s["score"], s["acc"], s["assay_status"]) for s in scores] == [
        (1.0, True, "ok"),
        (0.0, False, "ok"),
    ]
    assert openrlhf.ray_rewards(
        ["Q: 1+1? A: \\boxed{2}", "Q: 2+2? 5"], ["Q: 1+1?", "Q: 2+2?"], ["2", "4"]
    ) == [
        1.0,
        0.0,
    ]
    with pytest.raises(RewardUnavailable, match="invalid"):
        verl.compute_score("d", "\\boxed{2}", "2", task="no-such-task", ray=True)


def test_the_http_contract_and_error_envelope_are_those_of_assay_serve(app: str) -> None:
    with httpx.Client(base_url=app, timeout=60) as http:
        bad = http.post("/v1/rewards", json={"itemz": []})
        too_big = http.post("/v1/rewards", json={"items": [{"task": "math"}] * 65})
        tasks = http.get("/v1/tasks").json()["tasks"]
        ready = http.get("/readyz").json()
        ran = http.post("/run_code", json={"code": "print(6 * 7)"}).json()
        groups = http.post(
            "/v1/groups",
            json={
                "groups": [
                    {"id": "g", "items": [{"task": "math", "response": "\\boxed{2}", "reference": "2"}]}
                ]
            },
        )
    assert bad.status_code == 422 and bad.json()["error"]["type"] == "validation_error"
    assert too_big.status_code == 413 and too_big.json()["error"]["type"] == "payload_too_large"
    assert {"math", "sql", "code", "judge", "prm", "marked_gate"} <= {t["name"] for t in tasks}
    assert ready["status"] == "ready" and ready["queue_size"] == 64
    assert ran["status"] == "Success" and ran["run_result"]["stdout"] == "42\n"
    assert groups.status_code in (200, 404)  # /v1/groups ships with the groups feature


@contextmanager
def _in_background(call: Callable[[], Any], gate: Path) -> Iterator[Future[Any]]:
    """Run `call` in a thread; the gate opens on the way out whatever happens, so nothing is left held."""
    with ThreadPoolExecutor(1) as pool:
        try:
            yield pool.submit(call)
        finally:
            gate.touch()


def _gated(n: int, gate: Path, marks: Path, prefix: str = "g") -> list[dict[str, Any]]:
    options = {"gate": str(gate), "marks": str(marks)}
    return [
        {"id": f"{prefix}{i}", "task": "marked_gate", "response": "a", "reference": "a", "options": options}
        for i in range(n)
    ]


def test_a_full_queue_answers_429_with_retry_after(app: str, tmp_path: Path) -> None:
    gate, marks = tmp_path / "gate", tmp_path / "marks"
    marks.mkdir()
    with httpx.Client(base_url=app, timeout=120) as http:
        batch = {"items": _gated(64, gate, marks)}
        with _in_background(lambda: http.post("/v1/rewards", json=batch), gate) as held:
            _until(lambda: any(marks.iterdir()), 60, "the held batch to start")
            refused = http.post("/v1/rewards", json={"items": [{"task": "math", "response": "1"}]})
        first = held.result(timeout=120)
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "1"
    assert refused.json()["error"]["type"] == "queue_full"
    assert first.status_code == 200 and all(r["status"] == "ok" for r in first.json()["results"])


def _replica_below(raylet_pid: int, pid: int) -> int | None:
    """The Ray worker (replica) process that `pid` descends from, when it runs under that raylet."""
    try:
        chain = [psutil.Process(pid), *psutil.Process(pid).parents()]
    except psutil.NoSuchProcess:
        return None
    return next((c.pid for c, p in itertools.pairwise(chain) if p.pid == raylet_pid), None)


def test_a_node_removed_mid_batch_loses_no_item(
    cluster: RayCluster, settings: Settings, tmp_path: Path
) -> None:
    gate, marks = tmp_path / "gate", tmp_path / "marks"
    marks.mkdir()
    handle = reward_handle(settings)
    batch = _gated(16, gate, marks)
    node = cluster.workers.pop()
    raylet_pid = node.all_processes["raylet"][0].process.pid
    with _in_background(lambda: handle(batch), gate) as pending:
        # One worker process per replica: two items started at once means both replicas hold work.
        _until(lambda: len({m.name.split("-")[0] for m in marks.iterdir()}) >= 2, 60, "both replicas busy")
        doomed = {_replica_below(raylet_pid, int(m.name.split("-")[0])) for m in marks.iterdir()} - {None}
        assert len(doomed) == 1, "the node to remove holds no replica with work"
        cluster.cluster.remove_node(node, allow_graceful=False)
        _until(lambda: not _survivors(doomed), 60, "the replica to die")
        # Leaving the block opens the gate: only now can the surviving replica finish its items.
    results = pending.result(timeout=240)
    assert [r.id for r in results] == [item["id"] for item in batch]
    assert all(r.status is Status.OK and r.reward == 1.0 for r in results), [
        (r.id, r.status, r.reason) for r in results if r.status is not Status.OK
    ]
    assert handle.stats.retried >= 1 and handle.stats.lost_items == 0


def _running_replicas(app_name: str, deployment: str) -> int:
    status = serve.status().applications[app_name].deployments[deployment]
    return int(status.replica_states.get("RUNNING", 0))


def test_the_scorers_scale_from_one_to_three_replicas_under_load(
    cluster: RayCluster, settings: Settings, tmp_path: Path
) -> None:
    gate, marks = tmp_path / "gate", tmp_path / "marks"
    marks.mkdir()
    ray_section = settings.ray.model_dump()
    ray_section.update(app_name="assay-scale", chunk_size=1)
    for kind in ("code", "judge", "prm"):
        ray_section[kind]["replicas"] = 0  # a lean application: the CPU scorers and the ingress only
    ray_section["scorers"].update(
        replicas=1,
        max_replicas=3,
        target_ongoing_requests=1,
        upscale_delay_s=0,
        look_back_s=12,
        resources={"head": 1},
        num_cpus=0,
    )
    scaling = settings.model_copy(update={"ray": RaySettings.model_validate(ray_section)})
    handle = reward_handle(scaling)
    assert _running_replicas("assay-scale", "scorers") == 1
    load = _gated(8, gate, marks, prefix="s")  # bounded load: 8 held items
    with _in_background(lambda: handle(load), gate) as pending:
        _until(lambda: _running_replicas("assay-scale", "scorers") == 3, 120, "three running replicas")
    results = pending.result(timeout=120)
    assert [r.id for r in results] == [f"s{i}" for i in range(8)]
    assert all(r.status is Status.OK for r in results)
    assert len({r.reason for r in results}) >= 2  # the work was spread over more than one replica
    serve.delete("assay-scale")


def test_shutdown_leaves_no_process_behind(cluster: RayCluster) -> None:
    started = cluster.shutdown()
    assert started, "the cluster's processes were not found"
    deadline = time.monotonic() + 60
    while (left := _survivors(started)) and time.monotonic() < deadline:
        time.sleep(0.1)  # sleep-ok: polling interval of a bounded wait for processes to exit
    assert not left, f"processes left behind: {left}"
    assert not ray.is_initialized()


def _survivors(pids: set[int]) -> list[str]:
    left = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE:
                parent = process.parent()
                owner = f"{parent.pid} {' '.join(parent.cmdline())[:60]}" if parent else "none"
                left.append(f"{pid} {' '.join(process.cmdline())[:80]} (parent {owner})")
        except psutil.NoSuchProcess:
            continue
    return left
