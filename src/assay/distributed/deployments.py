"""The Ray Serve application: one deployment per kind of work, each wrapping the same Engine, and an HTTP
ingress that serves `create_app`'s routes from them.

    ingress (FastAPI: every route of `assay serve`)
      ├── scorers   math, sql, plugins: CPU-bound, a killable process pool per replica
      ├── code      sandbox slots
      ├── judge     OpenAI-compatible judge clients (latency-bound)
      ├── prm       the process reward model (`num_gpus` per replica)
      └── bindings  trajectory -> session for the trainer routes, with several ingress replicas
                    (one replica: `assay.distributed.bindings`)

Each deployment takes its replica count, autoscaling and resources from `Settings.ray.<kind>`.
"""

from __future__ import annotations

from typing import Any

from assay.distributed.bindings import BindingsReplica
from assay.distributed.dispatch import deployed_kinds
from assay.distributed.faults import require_ray
from assay.settings import RayDeploymentSettings, Settings

_BINDING_CALLS = 100_000  # calls the bindings replica takes at once (a wait for an open is one)


class ScorerReplica:
    """The body of every per-kind deployment: one Engine, so a replica answers as `assay serve` would."""

    def __init__(self, settings: Settings, kind: str) -> None:
        from assay.engine.scoring import Engine

        workers = getattr(getattr(settings.ray, kind), "workers", 1)  # math and sql run on scorers only
        self._engine = Engine(settings.model_copy(update={"workers": workers}))

    async def score(self, items: list[Any]) -> list[Any]:
        return await self._engine.score_async(items)

    async def run_program(self, program: Any, wait_s: float | None, max_waiting: int | None) -> Any:
        """`/run_code`: one program in this replica's sandbox slots, through its engine's fair gate
        (a SlotWaitTimeout or SandboxError travels back as raised)."""
        return await self._engine.run_program(program, wait_s, max_waiting)

    async def __del__(self) -> None:
        await self._engine.aclose(wait=False)


class Ingress:
    """Holds the handles of the per-kind deployments; Serve builds the FastAPI app after `__init__`."""

    def __init__(self, settings: Settings, handles: dict[str, Any], bindings: Any = None) -> None:
        self._settings = settings
        self._handles = handles
        self._bindings = bindings  # the `bindings` deployment's handle, with several ingress replicas

    def __serve_build_asgi_app__(self) -> Any:
        from assay.api import create_app
        from assay.distributed.engine import RayEngine

        handles, bindings = self._handles, self._bindings
        app = create_app(self._settings, engine_factory=lambda s, m: RayEngine(s, m, handles, bindings))
        app.add_middleware(ReplicaHeader)
        return app


class ReplicaHeader:
    """`X-Assay-Replica: <Serve's replica id>` on every answer: which ingress replica answered (Serve's
    proxy picks one per request), for an operator following a trajectory, and for the tests."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.replica: bytes | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.replica is None:
            from ray import serve

            self.replica = serve.get_replica_context().replica_id.unique_id.encode()
        replica = self.replica

        async def named(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"x-assay-replica", replica)]}
            await send(message)

        await self.app(scope, receive, named)


def deployment_options(section: RayDeploymentSettings) -> dict[str, Any]:
    """Ray Serve options for one kind: fixed replicas, or autoscaling on ongoing requests."""
    options: dict[str, Any] = {
        "max_ongoing_requests": section.max_ongoing_requests,
        "max_queued_requests": section.max_queued_requests,
        "ray_actor_options": {
            "num_cpus": section.num_cpus,
            "num_gpus": section.num_gpus,
            "resources": dict(section.resources),
        },
    }
    if section.max_replicas > section.replicas:
        options["autoscaling_config"] = {
            "min_replicas": section.replicas,
            "initial_replicas": section.replicas,
            "max_replicas": section.max_replicas,
            "target_ongoing_requests": section.target_ongoing_requests,
            "upscale_delay_s": section.upscale_delay_s,
            "downscale_delay_s": section.downscale_delay_s,
            "look_back_period_s": section.look_back_s,
        }
    else:
        options["num_replicas"] = section.replicas
    return options


def build_app(settings: Settings) -> Any:
    """The bound application (not yet running): `serve.run(build_app(settings), ...)`."""
    require_ray()
    from ray import serve

    replica: Any = serve.deployment(ScorerReplica)
    kinds = {
        kind: replica.options(name=kind, **deployment_options(getattr(settings.ray, kind))).bind(
            settings, kind
        )
        for kind in deployed_kinds(settings)
    }
    bindings = None
    if settings.ray.ingress_replicas > 1:  # trajectory -> session, read by every ingress replica
        table: Any = serve.deployment(BindingsReplica, name="bindings")
        bindings = table.options(
            num_replicas=1,  # one table: a claim is atomic on its one event loop
            max_ongoing_requests=_BINDING_CALLS,  # a call waiting for another's open holds one
            max_queued_requests=-1,
            ray_actor_options={"num_cpus": 0, "resources": dict(settings.ray.ingress_resources)},
        ).bind()
    ingress: Any = serve.deployment(serve.ingress()(Ingress), name="ingress")
    ingress = ingress.options(
        num_replicas=settings.ray.ingress_replicas,
        # The ingress admits by `queue_size` and answers 429 itself; Serve must not queue or refuse first.
        max_ongoing_requests=max(settings.queue_size, 1),
        max_queued_requests=-1,
        ray_actor_options={"num_cpus": 0, "resources": dict(settings.ray.ingress_resources)},
    )
    return ingress.bind(settings, kinds, bindings)


def deploy(settings: Settings, http: bool = True) -> None:
    """Start (or update) the application on the connected Ray cluster; returns once it is running.

    With `http`, Serve's proxy listens on `settings.host:settings.port` at `/`; without, the app has no
    route and is reached through handles only (`reward_handle`).
    """
    import ray
    from ray import serve

    from assay.distributed.sizing import require_room

    # The first start fixes Serve's proxies for the cluster; a handle-only deployment starts none.
    serve.start(
        proxy_location=settings.ray.proxy_location if http else "Disabled",
        http_options={"host": settings.host, "port": settings.port},
    )
    if settings.ray.check_resources and settings.ray.app_name not in serve.status().applications:
        require_room(settings, ray.available_resources())
    serve.run(
        build_app(settings),
        name=settings.ray.app_name,
        route_prefix="/" if http else None,
        blocking=False,
    )


def app_builder(args: dict[str, Any]) -> Any:
    """Serve's application-builder entry for config files and KubeRay's RayService:
    `import_path: assay.distributed.deployments:app_builder`, `args` are Settings fields (over ASSAY_*)."""
    return build_app(Settings(**args))
