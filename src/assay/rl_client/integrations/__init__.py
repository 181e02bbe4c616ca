"""Moved to `assay.integrations.clients` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.integrations")

from assay.integrations.clients import *  # noqa: E402, F403
