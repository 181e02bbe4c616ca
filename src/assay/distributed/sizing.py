"""What Assay's deployments reserve on a Ray cluster, and a check that they fit before Serve waits on them.

Ray Serve schedules a replica only where its `num_cpus`/`num_gpus`/custom resources are free, and
`serve.run` waits, silently and without end, for replicas that can never be placed. The default
deployments reserve 5.25 CPUs (scorers 2, code 2, judge 0.25, prm 1), so on a machine with fewer cores
`reward_handle()` used to hang forever (issue 31). A local Ray is therefore started with room for every
replica, and a cluster that lacks the room is refused at once with what is missing and what to change.
The session holders (`ray.sessions`, started with an ingress replica's first session) count too: one
that cannot be placed would leave its sessions' calls waiting out their bound.
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Mapping

from assay.distributed.dispatch import deployed_kinds
from assay.errors import ConfigError
from assay.settings import Settings


def reserved(settings: Settings, *, scaled_out: bool = False) -> dict[str, float]:
    """Resources the deployments reserve in all: at start (`replicas`), or at their autoscaling ceiling."""
    total: defaultdict[str, float] = defaultdict(float)
    for kind in deployed_kinds(settings):
        section = getattr(settings.ray, kind)
        count = max(section.replicas, section.max_replicas) if scaled_out else section.replicas
        total["CPU"] += section.num_cpus * count
        total["GPU"] += section.num_gpus * count
        for name, amount in section.resources.items():
            total[name] += amount * count
    for name, amount in settings.ray.ingress_resources.items():
        total[name] += amount * settings.ray.ingress_replicas
    holders = settings.ray.sessions.holders * settings.ray.ingress_replicas  # each replica starts its own
    total["CPU"] += settings.ray.sessions.num_cpus * holders
    for name, amount in settings.ray.sessions.resources.items():
        total[name] += amount * holders
    return {name: amount for name, amount in total.items() if amount > 0}


def local_cpus(settings: Settings) -> int:
    """Logical CPUs for a local Ray: the machine's, or what the replicas reserve at most if that is more
    (Ray's CPUs are a placement count, not a limit; oversubscribing one machine beats never starting)."""
    return max(os.cpu_count() or 1, math.ceil(reserved(settings, scaled_out=True).get("CPU", 0.0)))


def shortfall(wanted: Mapping[str, float], available: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """Each resource `wanted` beyond what is `available`: name -> (wanted, available)."""
    return {
        name: (amount, available.get(name, 0.0))
        for name, amount in wanted.items()
        if amount > available.get(name, 0.0) + 1e-9
    }


def require_room(settings: Settings, available: Mapping[str, float]) -> None:
    """ConfigError, in one line, when the deployments cannot all be placed in `available` resources."""
    missing = shortfall(reserved(settings), available)
    if not missing:
        return
    per_kind = ", ".join(
        f"{kind} {getattr(settings.ray, kind).num_cpus:g}x{getattr(settings.ray, kind).replicas}"
        for kind in deployed_kinds(settings)
    )
    lacking = "; ".join(f"{name}: {want:g} wanted, {have:g} free" for name, (want, have) in missing.items())
    raise ConfigError(
        f"Assay's Ray deployments cannot be placed ({lacking}; CPUs per replica x replicas: {per_kind}), "
        "and Ray Serve would wait for them forever: lower ASSAY_RAY__<KIND>__NUM_CPUS (a placement count, "
        "not a limit), set ASSAY_RAY__<KIND>__REPLICAS=0 for kinds you do not use, or add nodes "
        "(ASSAY_RAY__CHECK_RESOURCES=false for an autoscaling cluster that adds them on demand)"
    )
