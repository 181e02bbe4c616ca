"""The dispatcher without a cluster: routing by kind, chunking, input order, retry once, no lost item."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from assay.distributed.dispatch import Dispatcher, kind_of
from assay.errors import QueueFullError
from assay.registry import Registry, Scorer
from assay.settings import Settings
from assay.types import Result, Status

REGISTRY = Registry.from_settings(Settings())  # the built-in tasks: each declares its kind of work


def _echo(kind: str, items: list[Any]) -> list[Result]:
    return [Result.graded(float(len(kind)), kind, id=item.get("id")) for item in items]


class FakeDeployments:
    """`call(kind, items)`: fails the first `failures[kind]` calls of a kind, records what it got."""

    def __init__(self, failures: dict[str, int] | None = None, error: Exception | None = None) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.failures = dict(failures or {})
        self.error = error or ConnectionError("replica died")

    async def __call__(self, kind: str, items: list[Any]) -> list[Result]:
        self.calls.append((kind, [item.get("id") for item in items]))
        await asyncio.sleep(0)  # let the other chunks start, as real calls would
        if self.failures.get(kind, 0) > 0:
            self.failures[kind] -= 1
            raise self.error
        return _echo(kind, items)


def _items(tasks: str) -> list[dict[str, Any]]:
    return [{"id": str(i), "task": task} for i, task in enumerate(tasks.split())]


def test_each_item_goes_to_the_deployment_of_its_kind() -> None:
    assert [kind_of(i, REGISTRY) for i in _items("math sql code repo judge prm hang")] == [
        "scorers",
        "scorers",
        "code",
        "code",  # git and the tests run in sandboxes (it was sent to the CPU scorers; issue 36)
        "judge",
        "prm",
        "scorers",
    ]
    assert (
        kind_of(7, REGISTRY) == kind_of({"task": 3}, REGISTRY) == kind_of({}, REGISTRY) == "scorers"
    )  # malformed: scorers say invalid


def test_a_plugin_task_is_routed_by_the_kind_it_declares() -> None:
    class Graded(Scorer):
        name = "graded"
        work = "judge"

    registry = Registry({**REGISTRY, "graded": Graded})
    assert kind_of({"task": "graded"}, registry) == "judge"
    assert kind_of({"task": "graded"}, REGISTRY) == "scorers"  # unknown here: the scorers say so


def test_results_come_back_in_input_order_across_kinds_and_chunks() -> None:
    calls = FakeDeployments()
    items = _items("math code math judge math code math math")
    results = asyncio.run(Dispatcher(calls, chunk_size=2, retries=1, registry=REGISTRY).score(items))
    assert [r.id for r in results] == [i["id"] for i in items]
    assert [r.reason for r in results] == [kind_of(i, REGISTRY) for i in items]
    assert sorted(len(ids) for _, ids in calls.calls) == [1, 1, 2, 2, 2]  # scorers 5 -> 2+2+1


def test_a_chunk_whose_replica_died_is_sent_once_more() -> None:
    calls = FakeDeployments(failures={"scorers": 1})
    dispatcher = Dispatcher(calls, chunk_size=8, retries=1, registry=REGISTRY)
    results = asyncio.run(dispatcher.score(_items("math math code")))
    assert [r.status for r in results] == [Status.OK] * 3
    assert dispatcher.stats.retried == 1 and dispatcher.stats.lost_items == 0


def test_a_chunk_that_fails_again_comes_back_as_error_with_the_reason() -> None:
    calls = FakeDeployments(failures={"code": 2})
    dispatcher = Dispatcher(calls, chunk_size=8, retries=1, registry=REGISTRY)
    results = asyncio.run(dispatcher.score(_items("code math code")))
    assert [r.status for r in results] == [Status.ERROR, Status.OK, Status.ERROR]
    assert [r.id for r in results] == ["0", "1", "2"]
    for result in (results[0], results[2]):
        assert result.reward is None and result.task == "code"
        assert "code deployment failed this item 2 time(s): ConnectionError: replica died" in result.reason
    assert dispatcher.stats.lost_items == 2


def test_a_short_answer_from_a_replica_is_a_failure_not_a_shifted_batch() -> None:
    async def short(kind: str, items: list[Any]) -> list[Result]:
        return _echo(kind, items)[:-1]

    results = asyncio.run(
        Dispatcher(short, chunk_size=4, retries=1, registry=REGISTRY).score(_items("math math"))
    )
    assert all(r.status is Status.ERROR and "returned 1 results for 2 items" in r.reason for r in results)


def test_items_of_a_kind_without_deployment_are_errors_that_say_so() -> None:
    calls = FakeDeployments()
    dispatcher = Dispatcher(calls, chunk_size=4, retries=1, registry=REGISTRY, kinds=["scorers"])
    results = asyncio.run(dispatcher.score(_items("prm math")))
    assert results[0].status is Status.ERROR and results[0].id == "0"
    assert "no prm deployment on this cluster (ASSAY_RAY__PRM__REPLICAS is 0)" in results[0].reason
    assert results[1].status is Status.OK
    assert [kind for kind, _ in calls.calls] == ["scorers"]


def test_deployment_options_are_fixed_replicas_or_autoscaling_on_ongoing_requests() -> None:
    from assay.distributed.deployments import deployment_options
    from assay.distributed.dispatch import deployed_kinds
    from assay.settings import RayDeploymentSettings, Settings

    fixed = deployment_options(RayDeploymentSettings(replicas=3, num_gpus=1, max_queued_requests=7))
    assert fixed["num_replicas"] == 3 and "autoscaling_config" not in fixed
    assert fixed["ray_actor_options"]["num_gpus"] == 1 and fixed["max_queued_requests"] == 7
    scaling = deployment_options(RayDeploymentSettings(replicas=1, max_replicas=8, target_ongoing_requests=3))
    assert "num_replicas" not in scaling
    config = scaling["autoscaling_config"]
    assert (config["min_replicas"], config["max_replicas"], config["target_ongoing_requests"]) == (1, 8, 3)
    settings = Settings(ray={"prm": {"replicas": 0}, "judge": {"replicas": 2}})
    assert deployed_kinds(settings) == ["scorers", "code", "judge"]


def test_a_full_deployment_queue_is_queue_full_and_not_retried() -> None:
    full = QueueFullError(5, 5, 2.0)
    calls = FakeDeployments(failures={"judge": 5}, error=RuntimeError("backpressure"))
    dispatcher = Dispatcher(
        calls,
        chunk_size=1,
        retries=3,
        registry=REGISTRY,
        backpressure=lambda exc: full if "backpressure" in str(exc) else None,
    )
    with pytest.raises(QueueFullError) as raised:
        asyncio.run(dispatcher.score(_items("judge math")))
    assert raised.value is full
    assert [kind for kind, _ in calls.calls].count("judge") == 1


def test_ray_backpressure_maps_to_queue_full_with_retry_after() -> None:
    from assay.distributed.faults import queue_full, require_ray

    require_ray()  # imports Ray Serve without its own deprecation warnings
    from ray.serve.exceptions import BackPressureError

    mapped = queue_full(BackPressureError(num_queued_requests=9, max_queued_requests=8), 3.0)
    assert isinstance(mapped, QueueFullError) and mapped.retry_after_s == 3.0
    assert "9 items pending, limit 8" in str(mapped)
    assert queue_full(RuntimeError("other"), 3.0) is None


def test_importing_the_distributed_package_loads_no_ray() -> None:
    code = "import sys, assay, assay.distributed, assay.cli\nprint('ray' in sys.modules)\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "False"
