"""The trainer's self-contained service is `assay serve` in a child process (the trainer never imports
the server, tests/layers.toml): settings reach it as ASSAY_* variables, and it is gone after the run."""

from __future__ import annotations

import httpx
import pytest

from assay.client import AssayClient
from assay.rl_client.runs.service import local_service, settings_env
from assay.settings import Settings


def test_the_settings_that_were_set_travel_as_assay_variables() -> None:
    env = settings_env(Settings(workers=1, sessions={"max_open": 128}, plugins=["a.b:C"]))
    assert env == {"ASSAY_WORKERS": "1", "ASSAY_SESSIONS__MAX_OPEN": "128", "ASSAY_PLUGINS": '["a.b:C"]'}


def test_the_child_service_scores_with_the_given_settings_and_stops_on_exit() -> None:
    with local_service(Settings(workers=1, queue_size=77)) as url:
        with AssayClient(url) as client:
            [result] = client.score([{"task": "math", "response": "\\boxed{4}", "reference": "4"}])
            assert (result.status, result.reward) == ("ok", 1.0)
        assert httpx.get(f"{url}/readyz", timeout=10).json()["queue_size"] == 77
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/healthz", timeout=2)
