"""Moved to `assay.rl_client.runs.config` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.run_config")

from assay.rl_client.runs.config import *  # noqa: E402, F403
