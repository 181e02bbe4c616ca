"""Moved to `assay.integrations.trl` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.integrations.trl")

from assay.integrations.trl import *  # noqa: E402, F403
