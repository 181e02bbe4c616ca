"""Moved to `assay.rl_client.runs.demo_tools` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.demo_tools")

from assay.rl_client.runs.demo_tools import *  # noqa: E402, F403
