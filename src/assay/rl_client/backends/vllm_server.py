"""Moved to `assay.rl_client.runs.vllm_server` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.backends.vllm_server")

from assay.rl_client.runs.vllm_server import *  # noqa: E402, F403
