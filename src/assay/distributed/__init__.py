"""Assay on a Ray cluster: Ray Serve deployments per kind of work, and Ray-native reward handles.

- `assay serve --ray [--address ADDR]`: the HTTP service (same routes, contract, envelope, 429s) served
  by Ray Serve; see `deployments` for the layout and `Settings.ray` for replicas and autoscaling.
- `reward_handle(settings)`: for trainers already in a Ray job; call it with a batch, get `Result`s.

Ray is an optional extra (`pip install 'assay[ray]'`), imported only when these are used: importing this
package loads no Ray.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from assay.distributed.faults import require_ray
from assay.settings import Settings

if TYPE_CHECKING:
    from assay.distributed.handle import RewardHandle

__all__ = ["RewardHandle", "reward_handle", "serve", "shared_reward_handle"]


def reward_handle(settings: Settings | None = None, *, deploy: bool = True) -> RewardHandle:
    """A callable `handle(items) -> list[Result]` on the cluster's Assay deployments (no HTTP)."""
    require_ray()
    from assay.distributed.handle import reward_handle as make

    return make(settings, deploy=deploy)


@functools.lru_cache(maxsize=1)
def shared_reward_handle() -> RewardHandle:
    """One handle per process, from `ASSAY_*` settings: what the trainer adapters use."""
    return reward_handle()


def serve(settings: Settings, address: str | None = None) -> int:
    """`assay serve --ray`: deploy on Ray (a local instance without an address) and serve until Ctrl-C."""
    require_ray()
    from assay.distributed.server import serve_forever

    return serve_forever(settings, address)


def __getattr__(name: str) -> Any:
    if name == "RewardHandle":
        require_ray()
        from assay.distributed.handle import RewardHandle

        return RewardHandle
    raise AttributeError(name)
