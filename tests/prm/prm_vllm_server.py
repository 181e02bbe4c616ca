"""A real vLLM pooling server (tests/vllm_process.py) for the slow PRM tests.

`--dtype float32`: vLLM downcasts float32 checkpoints to float16 by default, which would make the
comparison with the transformers backend about a dtype rather than the wiring.
"""

from __future__ import annotations

import json
from pathlib import Path

from vllm_process import VLLM_PYTHON, VllmProcess

__all__ = ["HEALTH_WAIT_S", "VLLM_PYTHON", "VllmServer"]

HEALTH_WAIT_S = 120.0


class VllmServer(VllmProcess):
    """A pooling server for a tiny PRM, served as "tiny-prm", with an optional pooler config."""

    def __init__(self, model_dir: Path, log_path: Path, pooler_config: dict[str, int] | None) -> None:
        args = ["--served-model-name", "tiny-prm", "--runner", "pooling", "--dtype", "float32"]
        if pooler_config is not None:
            args += ["--pooler-config", json.dumps(pooler_config)]
        super().__init__(model_dir, log_path, *args)
