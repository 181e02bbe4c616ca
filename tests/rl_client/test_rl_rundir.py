"""An output directory that already holds a run (issue 43): a finished run is refused unless `--fresh`,
an unfinished `--config` run with a checkpoint is resumed with a notice, anything else starts anew with
a notice. The command's refusals: tests/rl_client/test_rl_demo.py and test_rl_run_config.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.rl_client.runs.rundir import FinishedRunError, prepare


def _finished(out: Path) -> Path:
    (out / "checkpoints" / "step-000004").mkdir(parents=True)
    (out / "log.jsonl").write_text('{"step": 1}\n')
    (out / "summary.json").write_text('{"steps": 4}\n')
    (out / "notes.txt").write_text("the user's own file\n")
    return out


def test_a_directory_without_a_run_is_used_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    assert prepare(tmp_path, fresh=False, resumable=True) is None
    assert prepare(tmp_path / "absent", fresh=False, resumable=False) is None
    assert (tmp_path / "notes.txt").exists()


def test_a_finished_run_is_refused_naming_the_flag_that_starts_anew(tmp_path: Path) -> None:
    out = _finished(tmp_path)
    for resumable in (True, False):
        with pytest.raises(FinishedRunError, match="--fresh"):
            prepare(out, fresh=False, resumable=resumable)
    assert (out / "summary.json").read_text() == '{"steps": 4}\n'
    assert (out / "checkpoints" / "step-000004").is_dir()


def test_fresh_removes_the_runs_outputs_and_nothing_else(tmp_path: Path) -> None:
    out = _finished(tmp_path)
    notice = prepare(out, fresh=True, resumable=True)
    assert notice is not None and "starting anew" in notice and "--fresh" in notice
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_an_unfinished_run_with_a_checkpoint_is_resumed_with_a_notice(tmp_path: Path) -> None:
    out = _finished(tmp_path)
    (out / "summary.json").unlink()
    notice = prepare(out, fresh=False, resumable=True)
    assert notice is not None and "resuming" in notice and "step 4" in notice
    assert (out / "log.jsonl").exists() and (out / "checkpoints" / "step-000004").is_dir()


def test_an_unfinished_run_that_cannot_resume_starts_anew_with_a_notice(tmp_path: Path) -> None:
    # A demo keeps no resumable state: its step log, appended to, would mix two runs.
    out = _finished(tmp_path)
    (out / "summary.json").unlink()
    notice = prepare(out, fresh=False, resumable=False)
    assert notice is not None and "starting anew" in notice
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
