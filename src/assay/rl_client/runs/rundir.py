"""What `assay train` does with an output directory that already holds a run: one policy for every run
kind (the demos and `--config`), so a finished run is never resumed or overwritten silently (issue 43;
re-running the demo used to append to the old step log and print a different result, with no notice).

- finished (`summary.json`, written last, is there): refused, naming `--fresh`; with `fresh`, the run's
  outputs are removed and the run starts anew;
- unfinished with a checkpoint, under `--config` with `output.resume` (the default): resumed, with a
  notice naming the step (an exact resume: `driver.py`);
- unfinished otherwise (the demos keep no resumable state; a run killed before its first checkpoint;
  `output.resume: false`): started anew, with a notice, after its outputs are removed (the step log is
  appended to, and would mix two runs).

Only the files a run writes are removed (`OUTPUTS`), never the directory or anything else in it; the
saved `model/` is overwritten at the end of a run instead, since a config may read its model from there.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from assay.errors import ConfigError
from assay.rl_client import checkpoints

SUMMARY = "summary.json"
OUTPUTS = (SUMMARY, "log.jsonl", "curves.png", "eval_start.json", "checkpoint", "checkpoints", "tensorboard")


class FinishedRunError(ConfigError):
    """The output directory holds a finished run and `fresh` was not asked for."""


def prepare(out: Path, *, fresh: bool, resumable: bool) -> str | None:
    """Make `out` ready for a run by the policy above; the notice to show the user, or None when the
    directory holds no run. `resumable`: the run can continue from a checkpoint (`--config` with
    `output.resume`). Raises `FinishedRunError` for a finished run without `fresh`."""
    present = [name for name in OUTPUTS if (out / name).exists()]
    if not present:
        return None
    if (out / SUMMARY).exists() and not fresh:
        raise FinishedRunError(
            f"{out} holds a finished run ({SUMMARY}); pass --fresh to start anew there "
            "(its summary, log, curves and checkpoints are removed) or choose another --out"
        )
    latest = checkpoints.newest(out / "checkpoints") if resumable and not fresh else None
    if latest is not None:
        step = checkpoints.step_of(latest)
        return f"resuming the unfinished run in {out} from step {step}; --fresh starts anew"
    for name in present:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    if fresh:
        return f"starting anew in {out}: the previous run's outputs were removed (--fresh)"
    return f"starting anew in {out}: the unfinished run there cannot be resumed, its outputs were removed"


def announce(notice: str | None) -> None:
    """Show `prepare`'s notice on stderr, where progress goes (stdout carries the summary)."""
    if notice is not None:
        print(f"assay train: {notice}", file=sys.stderr)
