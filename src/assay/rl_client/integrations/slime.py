"""Moved to `assay.integrations.slime` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.integrations.slime")

from assay.integrations.slime import *  # noqa: E402, F403
