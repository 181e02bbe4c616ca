"""APRIL partial rollouts on multi-turn groups (issue 26): an unfinished rollout keeps its session and
resumes next step under the newer policy; a session gone by then masks the rollout (never a 0); no
session outlives the run."""

from __future__ import annotations

import math
from typing import Any

from assay.client.sessions import SessionStep
from assay.errors import SessionGoneError
from assay.rl_client.config import ControlConfig, GenerateConfig, ToolsConfig, TrainConfig
from assay.rl_client.generate import Problem
from assay.rl_client.multiturn import ToolRollouts
from assay.rl_client.partial_tools import PartialToolRollouts
from assay.types import Status
from rl_client.multiturn_testing import FakeSessions, TurnBackend

CALL = "<python>print(6*7)</python>"
ANSWER = "\\boxed{42}"
# "S " answers at once; "L " calls the tool twice first: three turns, the long tail.
SCRIPTS = {"S ": [ANSWER], "L ": [CALL, CALL, ANSWER]}


def _cfg(**control: Any) -> TrainConfig:
    values: dict[str, Any] = {"partial_rollouts": True, "partial_overprovision": 2.0}
    values.update(control)
    return TrainConfig(
        generate=GenerateConfig(group_size=2, max_new_tokens=64),
        control=ControlConfig(**values),
        tools=ToolsConfig(tools=("python",), max_turns=4),
    )


def _ok(code: str) -> SessionStep:
    return SessionStep(session_id="", observation="42\n", status="ok", step=1)


def _partial(sessions: FakeSessions, cfg: TrainConfig | None = None) -> PartialToolRollouts:
    cfg = cfg or _cfg()
    return PartialToolRollouts(ToolRollouts(TurnBackend(SCRIPTS), sessions, cfg), cfg)


def _round(
    partial: PartialToolRollouts, prompts: list[str], version: int, start: int = 0, count: int = 1
) -> Any:
    problems = [Problem(f"{p.strip()}{start + i}", p, "42") for i, p in enumerate(prompts)]
    return partial.run(problems, [2] * len(problems), count=count, version=version)


def test_an_unfinished_rollout_keeps_its_session_and_resumes_next_step() -> None:
    sessions = FakeSessions(_ok)
    partial = _partial(sessions)
    assert partial.start_count(1) == 2
    done = _round(partial, ["S ", "L "], version=0)
    assert [g.problem.id for g in done] == ["S0"]
    held = [r.session_id for g in partial.pending for r in g.rollouts]
    assert len(held) == 2 and held == ["s3", "s4"]  # the long group's sessions, open
    assert not set(held) & set(sessions.closed)
    assert [v[0] for v in sessions.verified] == ["s1", "s2"]  # only the finished group was verified

    done = _round(partial, ["S "], version=1, start=10, count=2)  # a new group; the held one resumes
    assert len(sessions.opened) == 6  # a new session per new rollout, none for the resumed ones
    resumed = next(g for g in done if g.problem.id == "L1")
    assert partial.resumed == 1 and not partial.pending
    for sample in resumed.samples:
        c = sample.completion
        assert (c.turns, c.tool_calls, c.failure) == (3, 2, None)
        assert sample.reward == 1.0 and sample.weight == 1.0
        # its turns were sampled by policies 0 and 1: off-policy, dated by its oldest token
        assert sample.version == 0 and sample.off_policy
    fresh = [s for g in done if g.problem.id == "S10" for s in g.samples]
    assert all(s.version == 1 and not s.off_policy for s in fresh)
    # every session opened was deleted, each once its group was verified
    assert sorted(sessions.closed) == sorted(f"s{i}" for i in range(1, 7))
    assert {sid for sid, _ in sessions.verified} == set(sessions.closed)


def test_a_session_gone_when_its_rollout_resumes_masks_it_never_a_zero() -> None:
    steps = {"n": 0}

    def expire_after_the_first_step(code: str) -> Any:
        steps["n"] += 1
        if steps["n"] > 2:  # the two long rollouts' first calls ran; by the next step they expired
            return SessionGoneError("gone", None, "s3", "expired (600 s after its last call)")
        return _ok(code)

    sessions = FakeSessions(expire_after_the_first_step)
    partial = _partial(sessions)
    _round(partial, ["S ", "L "], version=0)
    done = _round(partial, ["S "], version=1, start=10, count=2)
    resumed = next(g for g in done if g.problem.id == "L1")
    for sample in resumed.samples:
        assert sample.result is not None and sample.result.status is Status.ERROR
        assert sample.reward is None and sample.weight == 0.0
        assert "session gone" in str(sample.completion.failure)
    assert not any(sid in ("s3", "s4") for sid, _ in sessions.verified)
    assert {"s3", "s4"} <= set(sessions.closed)  # deleted even so (idempotent on the server)


def test_closing_deletes_the_sessions_of_unfinished_rollouts() -> None:
    sessions = FakeSessions(_ok)
    partial = _partial(sessions)
    _round(partial, ["S ", "L "], version=0)
    assert partial.pending
    partial.close()
    assert sorted(sessions.closed) == sorted(f"s{i}" for i in range(1, 5))  # none leaked


def test_unfinished_rollouts_survive_a_state_round_trip_with_their_sessions() -> None:
    sessions = FakeSessions(_ok)
    partial = _partial(sessions)
    _round(partial, ["S ", "L "], version=0)
    again = _partial(sessions)
    again.load_state_dict(partial.state_dict())
    assert again.pending == partial.pending
    done = _round(again, [], version=1)
    assert [g.problem.id for g in done] == ["L1"] and all(s.reward == 1.0 for s in done[0].samples)
    assert len(sessions.opened) == 4  # resumed on the same sessions


def test_a_trainer_with_tools_and_partial_rollouts_holds_then_resumes_and_leaks_nothing() -> None:
    from assay.rl_client.filter import ServiceRewards
    from assay.rl_client.runs.demo import PAD
    from assay.rl_client.runs.models import build_char_model
    from assay.rl_client.trainer import Trainer

    sessions = FakeSessions(_ok)
    backend = TurnBackend(SCRIPTS)
    cfg = TrainConfig(
        steps=3,
        generate=GenerateConfig(group_size=2, max_new_tokens=64),
        control=ControlConfig(prompts_per_step=1, dynamic_sampling=False, partial_rollouts=True,
                              partial_overprovision=2.0),
        tools=ToolsConfig(tools=("python",), max_turns=4),
    )  # fmt: skip
    problems = [Problem("s", "S ", "42"), Problem("l", "L ", "42")]
    model = build_char_model(backend.tokenizer, seed=0, width=32, layers=1, positions=256)
    trainer = Trainer(model, backend, ServiceRewards.at("http://127.0.0.1:9"), problems, cfg, pad_id=PAD,
                      sessions=sessions)  # fmt: skip
    try:
        records = trainer.train(3)
    finally:
        trainer.close()
    assert sum(r["partial_resumed"] for r in records) >= 1  # a held group finished in a later step
    assert all(math.isfinite(r["loss"]) and r["session_failures"] == 0.0 for r in records)
    opened = {f"s{i}" for i in range(1, len(sessions.opened) + 1)}
    assert set(sessions.closed) == opened  # every session deleted, the held ones by close()
