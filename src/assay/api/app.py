"""The app factory. Everything the service holds (engine, metrics) lives on `app.state`, built from the
settings passed in: tests build apps from explicit settings, and two apps never share state."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.routing import Route

from assay import __version__
from assay.api import (
    envelope,
    groups,
    health,
    mcp,
    nemo_gym,
    openenv,
    openrlhf,
    repo,
    rewards,
    run_code,
    schema,
    sessions,
    trees,
    validate,
    verl_tool,
)
from assay.api.limits import BodyLimitMiddleware
from assay.api.middleware import ObserveMiddleware
from assay.engine.microbatch import MicroBatcher
from assay.engine.scoring import Engine
from assay.engine.service import Service
from assay.metrics import Metrics
from assay.settings import Settings

_DESCRIPTION = """
Assay scores RL rollouts: math, code, SQL, LLM judges and process rewards behind one contract.

Every item gets a result with a `status`: `ok` (with a `reward`), `invalid`, `timeout` or `error`
(with `reward: null`). A failure is never reported as a reward of 0.
"""


def create_app(
    settings: Settings | None = None, engine_factory: Callable[[Settings, Metrics], Service] = Engine
) -> FastAPI:
    """Build the service. The engine (worker processes) starts with the app and stops after in-flight
    requests finish (uvicorn drains connections on SIGTERM, for `drain_s`, before the lifespan ends).
    `engine_factory` swaps in another implementation of `assay.engine.service.Service` (`assay.distributed`
    scores on Ray Serve deployments)."""
    settings = settings if settings is not None else Settings()
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = engine_factory(settings, metrics)
        app.state.engine = engine
        app.state.microbatcher = MicroBatcher(engine)
        # Workers start in the background: /healthz answers at once, /readyz once they are warm.
        starting = asyncio.create_task(health.start(app, engine))
        try:
            async with mcp.serving(app):  # MCP sessions end before the engine closes
                yield
        finally:
            starting.cancel()
            await app.state.microbatcher.aclose()
            await engine.aclose(wait=True)

    app = FastAPI(
        title="Assay",
        version=__version__,
        description=_DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = metrics
    envelope.install(app)
    sessions.install(app)

    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(ObserveMiddleware, metrics=metrics, retry_after_s=settings.retry_after_s)
    app.include_router(rewards.router)
    app.include_router(groups.router)
    app.include_router(trees.router)
    app.include_router(openrlhf.router)
    app.include_router(health.router)
    app.include_router(run_code.router)
    app.include_router(validate.router)
    app.include_router(repo.router)
    app.include_router(sessions.router)
    app.include_router(verl_tool.router)
    app.include_router(openenv.router)
    # A route, not a mount: MCP clients post to `/mcp` itself, which a mount would redirect to `/mcp/`.
    app.router.routes.append(
        Route("/mcp", mcp.McpEndpoint(), methods=["GET", "POST", "DELETE"], include_in_schema=False)
    )
    nemo_gym.install(app, settings)  # last: its tool routes take only free paths
    schema.install(app, settings)
    return app
