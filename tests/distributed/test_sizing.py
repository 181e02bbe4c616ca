"""Deployments sized to the machine: a local Ray with room for every replica, and a cluster without room
refused at once with the reason, instead of Ray Serve waiting forever (issue 31).

The real-Ray tests run in a child process with a bound, so a hang is a failure here, not a stuck suite.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from assay.distributed.sizing import require_room, reserved
from assay.errors import ConfigError
from assay.settings import Settings

# What the 2-core machines this runs on look like to Ray: 2 CPUs (os.cpu_count() there).
SMALL_RAY = "ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)"
SCORE = """
from assay.distributed import reward_handle
from assay.settings import Settings
try:
    handle = reward_handle(Settings(workers=1, ray={{"scorers": {{"workers": 1}}}}))
    [result] = handle([{{"task": "math", "response": "\\\\boxed{{4}}", "reference": 4}}])
    print("RESULT", result.status, result.reward)
except Exception as exc:
    print("ERROR", type(exc).__name__, exc)
finally:
    import ray
    from ray import serve
    if ray.is_initialized():
        serve.shutdown()
        ray.shutdown()
"""


def _run(prelude: str, timeout: float) -> tuple[str, float]:
    """Run SCORE after `prelude` in a fresh interpreter; its stdout and how long it took."""
    script = f"import ray\n{prelude}\n{SCORE.format()}"
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, time.monotonic() - start


def test_the_default_deployments_reserve_five_and_a_quarter_cpus() -> None:
    assert reserved(Settings()) == {"CPU": 5.25}
    assert reserved(Settings(ray={"code": {"replicas": 0}, "prm": {"replicas": 0}})) == {"CPU": 2.25}


def test_session_holders_count_per_ingress_replica() -> None:
    holders = {"holders": 3, "num_cpus": 0.5, "resources": {"sessions": 1}}
    wanted = reserved(Settings(ray={"ingress_replicas": 2, "sessions": holders}))
    assert wanted == {"CPU": 5.25 + 2 * 3 * 0.5, "sessions": 6}


def test_a_cluster_without_room_is_refused_in_one_line_that_says_what_lacks() -> None:
    with pytest.raises(ConfigError) as caught:
        require_room(Settings(), {"CPU": 2.0, "memory": 1e9})
    message = str(caught.value)
    assert "\n" not in message
    assert "CPU: 5.25 wanted, 2 free" in message
    assert "ASSAY_RAY__<KIND>__NUM_CPUS" in message


def test_room_for_every_replica_passes_custom_resources_included() -> None:
    settings = Settings(ray={"scorers": {"replicas": 2, "resources": {"slot": 1}}})
    require_room(settings, {"CPU": 7.25, "slot": 2})
    with pytest.raises(ConfigError, match="slot: 2 wanted, 1 free"):
        require_room(settings, {"CPU": 8, "slot": 1})


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_reward_handle_on_a_two_cpu_ray_fails_fast_with_the_reason() -> None:
    out, took = _run(SMALL_RAY, timeout=180)
    assert "ERROR ConfigError" in out and "CPU: 5.25 wanted" in out, out
    assert took < 120, f"took {took:.0f} s to refuse"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_reward_handle_without_ray_starts_one_with_room_and_scores() -> None:
    # Nothing running: reward_handle starts a local Ray itself, sized to the deployments, not to the cores.
    out, _ = _run("", timeout=240)
    assert "RESULT ok 1.0" in out, out
