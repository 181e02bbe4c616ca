"""Moved to `assay.rl_client.runs.service` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.service")

from assay.rl_client.runs.service import *  # noqa: E402, F403
