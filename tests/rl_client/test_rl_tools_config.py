"""`train.tools` in a run config (issue 26): parsed from YAML, typed by `--set`, refused where a
multi-turn run cannot work, with messages that say what to change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.rl_client.runs.config import ConfigError, apply_override, load_config, validate

MINIMAL = {"model": {"path": "m"}, "data": {"train": "t.jsonl"}}


def _with(**train: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(MINIMAL))
    data["train"] = train
    return data


def test_tools_section_from_yaml(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text(
        "model: {path: m}\ndata: {train: t.jsonl}\ntrain:\n  tools:\n    tools: [python]\n"
        "    max_turns: 3\n    call_format: tags\n    max_total_tokens: 256\n    limits: {max_steps: 8}\n"
    )
    cfg, _ = load_config(tmp_path / "run.yaml")
    tools = cfg.train.tools
    assert (tools.tools, tools.max_turns, tools.call_format, tools.max_total_tokens) == (
        ("python",),
        3,
        "tags",
        256,
    )
    assert tools.limits == {"max_steps": 8}


def test_set_overrides_reach_the_tools_section() -> None:
    data = _with()
    for assignment in ["train.tools.tools=[python, sql]", "train.tools.max_turns=5"]:
        apply_override(data, assignment)
    cfg = validate(data)
    assert cfg.train.tools.tools == ("python", "sql") and cfg.train.tools.max_turns == 5


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_with(tools={"tools": ["python"], "call_format": "json"}), "call_format"),
        (_with(tools={"tools": ["python"], "max_turns": 0}), "max_turns"),
        ({**_with(tools={"tools": ["python"]}), "reward": {"task_weights": {"math": 2}}}, "task_weights"),
        (_with(tools={"tools": ["python"], "observation_template": "<output>"}), "{observation}"),
    ],
)
def test_runs_tools_cannot_serve_are_refused_with_the_reason(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("{", r"\{").replace("}", r"\}")):
        validate(data)


@pytest.mark.parametrize("kind", ["vllm", "vllm_server"])
def test_the_vllm_backends_may_run_tools(kind: str) -> None:
    data = {**_with(tools={"tools": ["python"], "call_format": "hermes"}), "backend": {"kind": kind}}
    cfg = validate(data)
    assert (cfg.train.tools.tools, cfg.train.tools.call_format) == (("python",), "hermes")


def test_no_tools_is_the_single_turn_run() -> None:
    assert validate(MINIMAL).train.tools.tools == ()
