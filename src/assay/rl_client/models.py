"""Moved to `assay.rl_client.runs.models` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.models")

from assay.rl_client.runs.models import *  # noqa: E402, F403
