"""Reward handles for trainers already inside a Ray job (verl, OpenRLHF): batches in, `Result`s out, no HTTP.

    from assay.distributed import reward_handle
    score = reward_handle()                 # joins the job's Ray cluster; deploys Assay unless running
    results = score(items)                  # or: await score.ascore(items) inside an event loop

The handle calls the per-kind deployments directly (one hop, Ray's object transport), with the same
chunking, retry-once and input order as the HTTP ingress. It pickles, so a reward manager actor can hold
one. A full deployment queue raises `QueueFullError` (retry later); a lost replica never loses an item.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from assay.distributed.dispatch import Dispatcher, DispatchStats, deployed_kinds
from assay.settings import Settings
from assay.types import Result


class RewardHandle:
    """Callable: `handle(items) -> list[Result]` in input order."""

    def __init__(self, settings: Settings, handles: Mapping[str, Any]) -> None:
        self.settings = settings
        self._handles = dict(handles)
        self._dispatcher = Dispatcher.on_serve(self._call, settings, kinds=self._handles)

    def __reduce__(self) -> tuple[Any, ...]:
        return (RewardHandle, (self.settings, self._handles))

    @property
    def stats(self) -> DispatchStats:
        return self._dispatcher.stats

    async def _call(self, kind: str, items: list[Any]) -> list[Result]:
        results: list[Result] = await self._handles[kind].score.remote(items)
        return results

    async def ascore(self, items: Iterable[Any]) -> list[Result]:
        return await self._dispatcher.score(list(items))

    def __call__(self, items: Iterable[Any]) -> list[Result]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ascore(items))
        raise RuntimeError("an event loop is running in this thread: use `await handle.ascore(items)`")


def _join_or_start(settings: Settings) -> None:
    """Join the cluster Ray finds (`settings.ray.address`, RAY_ADDRESS, one started by `ray start`), or
    start a local Ray with room for every replica: Ray's default of one CPU per core left the default
    deployments unplaceable on small machines (issue 31)."""
    import ray

    from assay.distributed.sizing import local_cpus

    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if settings.ray.address is not None:
        ray.init(address=settings.ray.address, **options)
        return
    try:
        ray.init(num_cpus=local_cpus(settings), **options)
    except ValueError:  # Ray found a running cluster, where num_cpus may not be given: join it as it is
        ray.init(**options)


def reward_handle(settings: Settings | None = None, *, deploy: bool = True) -> RewardHandle:
    """A handle on the Assay application named `settings.ray.app_name`.

    Joins Ray at `settings.ray.address` unless this process is already connected (inside a Ray job it
    is). With `deploy`, starts the application (without HTTP) when it is not running yet; an application
    already started by `assay serve --ray` is used as it is.
    """
    import ray
    from ray import serve

    from assay.distributed.deployments import deploy as deploy_app

    settings = settings if settings is not None else Settings()
    if not ray.is_initialized():
        _join_or_start(settings)
    running = settings.ray.app_name in serve.status().applications
    if deploy and not running:
        deploy_app(settings, http=False)
    app = settings.ray.app_name
    handles = {kind: serve.get_deployment_handle(kind, app_name=app) for kind in deployed_kinds(settings)}
    return RewardHandle(settings, handles)
