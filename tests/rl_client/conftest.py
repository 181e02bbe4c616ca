"""rl_client fixtures: torch on one thread while these tests run.

Why: on a busy 2-core machine, two OpenMP threads per tiny op spin against each other; a 0.4M-parameter
SFT step measured 1.3-1.9 s with 2 threads and 0.13 s with 1.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    try:
        import torch
    except ImportError:  # the integration tests do not need torch
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def assay_service() -> Iterator[str]:
    """One live service per test module (a worker pool takes seconds to start on 2 busy cores), built
    with the suite's misbehaving plugins; `live_server` remains for tests that need other settings."""
    from assay_test_plugins import PLUGINS

    from assay.api.local import local_service
    from assay.settings import Settings

    with local_service(Settings(workers=1, plugins=PLUGINS, deadline_s=1.0)) as url:
        yield url
