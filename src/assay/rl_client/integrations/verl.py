"""Moved to `assay.integrations.verl` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.integrations.verl")

from assay.integrations.verl import *  # noqa: E402, F403
