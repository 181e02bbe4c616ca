"""Moved to `assay.rl_client.runs.sft` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.sft")

from assay.rl_client.runs.sft import *  # noqa: E402, F403
