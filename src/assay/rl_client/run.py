"""Moved to `assay.rl_client.runs.driver` and `.session` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.run")

from assay.rl_client.runs.driver import *  # noqa: E402, F403
from assay.rl_client.runs.session import *  # noqa: E402, F403
