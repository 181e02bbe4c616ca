"""`assay train --config` with `train.tools` (issue 26): the configured run opens its sessions on the
reward service, logs the tool curves, evaluates with its tools and leaves no session open."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from assay_testing import LiveServer, bwrap_works
from session_testing import session_settings
from tiny_models import build_chat_model

from assay.rl_client.runs.config import validate
from assay.rl_client.runs.driver import run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_a_configured_run_with_tools_uses_sessions_and_closes_them(tmp_path: Path) -> None:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    model_dir = build_chat_model(sys.executable, tmp_path / "tiny-chat")
    rows = [{"question": f"What is {i} * 7?", "answer": str(7 * i)} for i in range(6)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    live = LiveServer(session_settings(max_open=16))
    live.start()
    try:
        cfg = validate(
            {
                "model": {"path": str(model_dir)},
                "data": {"train": "train.jsonl", "fields": {"prompt": "question", "reference": "answer"},
                         "eval_size": 2, "eval_fraction": 0.3},
                "reward": {"url": live.url},
                "train": {
                    "steps": 2, "seed": 0, "eval_every": 1,
                    "generate": {"group_size": 2, "max_new_tokens": 8},
                    "control": {"prompts_per_step": 2, "dynamic_sampling": False},
                    "tools": {"tools": ["python"], "max_turns": 2, "limits": {"max_steps": 2}},
                },
                "output": {"dir": "out", "plots": False, "save_model": False},
            }
        )  # fmt: skip
        summary = run(cfg, tmp_path, progress=False)
        assert not live.engine.sessions.manager._sessions  # every rollout's and eval's session was deleted
    finally:
        live.stop()
    records = [json.loads(line) for line in (tmp_path / "out" / "log.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for record in records:
        assert {"turns", "tool_calls", "tool_errors", "session_failures", "tool_error_rate"} <= set(record)
        assert record["session_failures"] == 0.0 and record["turns"] >= 1.0
        assert 0.0 <= record["dev_accuracy"] <= 1.0
    assert summary["steps"] == 2
