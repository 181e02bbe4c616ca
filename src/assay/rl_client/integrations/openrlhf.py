"""Moved to `assay.integrations.openrlhf` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.integrations.openrlhf")

from assay.integrations.openrlhf import *  # noqa: E402, F403
