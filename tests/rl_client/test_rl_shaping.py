"""Length control in the trainer (issue 40): `algorithm.shaping` goes to the server with each group, and
the advantages start from each result's `shaped_reward`, while Control still filters on raw correctness."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.groups import GroupOutcome
from assay.groups.shaping import SolveRates, group_outcome, shaping_parts
from assay.groups.stats import GroupResult
from assay.rl_client.config import ControlConfig, GenerateConfig, ShapingConfig, TrainConfig
from assay.rl_client.control import PromptSampler, fill_batch, shape
from assay.rl_client.filter import RewardPipe, group_payload
from assay.rl_client.generate import Completion, Group, Problem, Sample, SamplingParams
from assay.rl_client.replay import ReplayBuffer
from assay.rl_client.rollout import Rollout
from assay.rl_client.runs.config import apply_override, validate
from assay.types import Result
from rl_client.fakes import ExactMatchRewards, StatelessBackend, completion, one_round

SHORTER_BETTER = ShapingConfig(method="shorter_better", alpha=2.0, beta=0.1)


class LengthBackend(StatelessBackend):
    """Answers with the next text of a script; each character is one token, so lengths are known."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts, self.calls = list(texts), 0

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        out = []
        for _ in prompts:
            text = self.texts[self.calls % len(self.texts)]
            self.calls += 1
            out.append(Completion([1], [ord(c) for c in text], text, [-0.1] * len(text), False))
        return out


class ShapingServer:
    """Scores groups as POST /v1/groups does, with the server's own shaping arithmetic (correct: the
    response starts with "1"), and keeps what it was sent."""

    def __init__(self) -> None:
        self.requests = 0
        self.sent: list[dict[str, Any]] = []

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        raise AssertionError("a shaped run scores groups, never flat items")

    async def ascore_groups(self, groups: list[dict[str, Any]]) -> list[GroupOutcome]:
        self.requests += 1
        self.sent.extend(groups)
        out = []
        for index, group in enumerate(groups):
            gid, spec, split = shaping_parts(index, group)
            results = [Result.verdict(item["response"].startswith("1")) for item, _ in split]
            out.append(group_outcome(gid, spec, split, results, SolveRates(None)))
        return out

    async def aclose(self) -> None:
        return None


PROBLEMS = [Problem(f"p{i}", f"q{i}?", "1") for i in range(4)]


def _rollout(texts: Sequence[str], cfg: TrainConfig, source: Any) -> tuple[Rollout, RewardPipe]:
    pipe = RewardPipe(source)
    sampler = PromptSampler(PROBLEMS, cfg.control, cfg.generate.group_size, seed=0)
    return Rollout(LengthBackend(texts), pipe, sampler, ReplayBuffer(cfg.replay), cfg), pipe


def _config(shaping: ShapingConfig = SHORTER_BETTER, **control: Any) -> TrainConfig:
    return TrainConfig(
        generate=GenerateConfig(group_size=4, max_new_tokens=8),
        control=ControlConfig(prompts_per_step=1, **control),
        shaping=shaping,
    )


def test_rewards_are_shorter_betters_alpha_correct_minus_beta_distance_to_the_shortest_correct() -> None:
    # lengths 1, 4, 1, 6; correct: the first two, so SOL = 1 (Yi et al. 2025)
    _, [group] = one_round(LengthBackend(["1", "1abc", "2", "2abcde"]), ShapingServer(), _config(), PROBLEMS)
    # 2*1 - 0.1*0, 2*1 - 0.1*3, 2*0 - 0.1*0, 2*0 - 0.1*5
    assert [s.reward for s in group.samples] == pytest.approx([2.0, 1.7, 0.0, -0.5])
    assert [s.raw_score for s in group.samples] == [True, True, False, False]


def test_each_group_carries_its_shaping_and_each_item_its_token_count() -> None:
    server = ShapingServer()
    one_round(LengthBackend(["1", "1abc", "2", "2abcde"]), server, _config(), PROBLEMS)
    [sent] = server.sent
    assert sent["shaping"] == {"method": "shorter_better", "alpha": 2.0, "beta": 0.1}
    assert [item["length"] for item in sent["items"]] == [1, 4, 1, 6]


def test_without_shaping_no_option_or_length_is_sent_and_the_raw_reward_is_kept() -> None:
    group = Group(Problem("p", "q?", "1"), "q?", [Sample(completion("1", tokens=3), 0)])
    [plain] = group_payload([group])
    assert set(plain) == {"id", "items"}
    assert "length" not in plain["items"][0]


def test_dynamic_sampling_drops_a_group_whose_shaped_rewards_differ_but_correctness_does_not() -> None:
    # all correct, lengths 1..4: shaped rewards 2, 1.9, 1.8, 1.7, raw correctness all equal
    rollout, pipe = _rollout(["1", "1a", "1ab", "1abc"], _config(max_rounds=2), ShapingServer())
    try:
        fill = fill_batch(lambda k: rollout.round(k, version=0), 1, rollout.cfg.control)
    finally:
        pipe.close()
    assert len(set(s.reward for g in fill.seen for s in g.samples)) == 4
    assert fill.rounds == 2 and fill.kept == []


def _shaped_group(rewards: Sequence[tuple[Result, float | None]]) -> Group:
    samples = []
    for result, shaped in rewards:
        gr = GroupResult(**dict(result), shaped_reward=shaped)
        samples.append(
            Sample(completion(), 0, gr, result.reward, weight=1.0 if result.reward is not None else 0.0)
        )
    return Group(Problem("p", "q?", "1"), "q?", samples)


def test_a_null_shaped_reward_masks_the_sample_and_never_becomes_zero() -> None:
    # an ok verdict the server could not shape, beside an error the server could not score
    group = _shaped_group(
        [(Result.verdict(True), 1.5), (Result.verdict(False), None), (Result.error("worker crashed"), None)]
    )
    shape([group], ControlConfig(), max_new_tokens=8, shaped=True)
    assert [(s.reward, s.weight) for s in group.samples] == [(1.5, 1.0), (None, 0.0), (None, 0.0)]


def test_shaping_off_uses_the_raw_reward_even_when_a_shaped_one_is_present() -> None:
    group = _shaped_group([(Result.verdict(True), 1.5), (Result.verdict(False), -0.2)])
    shape([group], ControlConfig(), max_new_tokens=8)
    assert [s.reward for s in group.samples] == [1.0, 0.0]


def test_a_source_that_only_scores_flat_items_cannot_shape() -> None:
    pipe = RewardPipe(ExactMatchRewards())
    try:
        group = Group(Problem("p", "q?", "1"), "q?", [Sample(completion(), 0)])
        with pytest.raises(ConfigError, match="scores groups"):
            pipe.submit_groups([group], {"method": "shorter_better"})
    finally:
        pipe.close()


def test_methods_the_trainer_cannot_run_are_refused_with_what_they_need() -> None:
    with pytest.raises(ValueError, match="one of"):
        ShapingConfig(method="shortest")


def test_shaping_refuses_options_that_edit_the_scored_group() -> None:
    from assay.rl_client.config import ReplayConfig

    with pytest.raises(ValueError, match=r"replay\.inject_correct"):
        TrainConfig(shaping=SHORTER_BETTER, replay=ReplayConfig(inject_correct=True))


def _run_data(**extra: Any) -> dict[str, Any]:
    return {"model": {"path": "m"}, "data": {"train": "t.jsonl"}, **extra}


def test_algorithm_shaping_is_train_shaping_and_can_be_set_from_the_command_line() -> None:
    data = _run_data()
    apply_override(data, "algorithm.shaping.method=shorter_better")
    apply_override(data, "algorithm.shaping.beta=0.01")
    cfg = validate(data)
    assert cfg.algorithm == "grpo"
    assert cfg.train.shaping == ShapingConfig(method="shorter_better", beta=0.01)


def test_shaping_with_another_algorithm_says_what_to_change() -> None:
    data = _run_data(algorithm={"name": "rft", "shaping": {"method": "shorter_better"}})
    with pytest.raises(ConfigError, match="works with algorithm grpo"):
        validate(data)


def test_a_bad_shaping_method_in_a_run_config_is_an_actionable_error() -> None:
    with pytest.raises(ConfigError, match="adapt_think needs exactly one of"):
        validate(_run_data(algorithm={"shaping": {"method": "adapt_think"}}))


def test_the_demo_takes_algorithm_shaping_by_set() -> None:
    from assay.rl_client.runs.command import demo_shaping

    shaping = demo_shaping(["algorithm.shaping.method=shorter_better", "train.shaping.alpha=1"])
    assert shaping == ShapingConfig(method="shorter_better", alpha=1.0)
    assert demo_shaping([]) == ShapingConfig()


class PathBackend(StatelessBackend):
    """A token-level backend over the demo's characters: a path is `path` then the end token, an exit's
    answer is `answer` then the end token; it keeps every prefix it continued."""

    def __init__(self, path: str, answer: str, answer_budget: int) -> None:
        from assay.rl_client.runs.demo import CharTokenizer

        self.tokenizer = CharTokenizer()
        self.path, self.answer, self.answer_budget = path, answer, answer_budget
        self.continued: list[list[int]] = []

    def generate_ids(self, prompt_ids: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        is_answer = params.max_new_tokens == self.answer_budget
        if is_answer:
            self.continued.extend(list(p) for p in prompt_ids)
        text = self.answer if is_answer else self.path
        ids = [*self.tokenizer.encode_plain(text), self.tokenizer.eos_token_id]
        lp = -0.25 if is_answer else -0.5
        return [Completion(list(p), list(ids), text, [lp] * len(ids), False) for p in prompt_ids]


class ShortIsRight(ShapingServer):
    """Correct when the response is at most three characters: early exits are right, late ones wrong."""

    async def ascore_groups(self, groups: list[dict[str, Any]]) -> list[GroupOutcome]:
        self.sent.extend(groups)
        out = []
        for index, group in enumerate(groups):
            gid, spec, split = shaping_parts(index, group)
            results = [Result.verdict(len(item["response"]) <= 3) for item, _ in split]
            out.append(group_outcome(gid, spec, split, results, SolveRates(None)))
        return out


def _serial_round(cue: str = "") -> tuple[Group, ShortIsRight, PathBackend]:
    cfg = TrainConfig(
        generate=GenerateConfig(group_size=4, max_new_tokens=8),
        control=ControlConfig(prompts_per_step=1),
        shaping=ShapingConfig(method="s_grpo", exit_cue=cue, exit_tokens=2),
    )
    server, backend = ShortIsRight(), PathBackend("1234", "5", answer_budget=2)
    _, [group] = one_round(backend, server, cfg, [Problem("p", "1+2=", "3")])
    return group, server, backend


def test_cuts_are_spread_evenly_over_the_path() -> None:
    from assay.rl_client.serial import cut_positions

    assert cut_positions(5, 3) == [1, 2, 4]  # round(1.25), round(2.5), round(3.75)
    assert cut_positions(3, 7) == [0, 1, 1, 2, 2, 2, 3]  # a short path repeats positions


def test_a_serial_group_is_one_path_cut_at_its_exits_and_the_whole_path_last() -> None:
    group, server, backend = _serial_round()
    # the path "1234" + end (5 tokens), cut at 1, 2 and 3 (its end token aside) and answered "5" + end
    assert [s.completion.text for s in group.samples] == ["15", "125", "1235", "1234"]
    assert group.exit_positions == [1, 2, 3, 5]
    [sent] = server.sent
    assert sent["shaping"] == {"method": "s_grpo", "decay": 0.5}
    assert [i["exit_position"] for i in sent["items"]] == [1, 2, 3, 5]
    prompt = backend.tokenizer.encode("1+2=")
    assert backend.continued == [prompt + backend.tokenizer.encode_plain(c) for c in ("1", "12", "123")]


def test_serial_rewards_follow_s_grpo_decay_over_the_correct_exits_in_order() -> None:
    # correct exits at positions 1 and 2 (the 1st and 2nd correct): 1/2^0, 1/2^1; wrong exits 0 (Dai et al.)
    group, _, _ = _serial_round()
    assert [s.reward for s in group.samples] == [1.0, 0.5, 0.0, 0.0]
    assert [s.raw_score for s in group.samples] == [True, True, False, False]


def test_the_exit_cue_is_forced_and_masked_out_of_the_loss() -> None:
    group, _, backend = _serial_round(cue="=")
    first = group.samples[0].completion
    ids = backend.tokenizer.encode_plain
    assert first.token_ids == [*ids("1"), *ids("="), *ids("5"), backend.tokenizer.eos_token_id]
    assert first.action_mask == [1, 0, 1, 1]
    assert first.logprobs == [-0.5, 0.0, -0.25, -0.25]
    assert first.text == "1=5"
    assert group.samples[-1].completion.action_mask is None  # the whole path is all the policy's


def test_s_grpo_refuses_options_that_resize_or_resample_a_group() -> None:
    with pytest.raises(ValueError, match="adaptive_group"):
        TrainConfig(shaping=ShapingConfig(method="s_grpo"), control=ControlConfig(adaptive_group=True))


class ThinkingPathBackend(StatelessBackend):
    """The verbose demo's tokens: a path is `ab</think>345` then the end token; an exit answers `345` when
    it kept some thinking and `999` when it kept none; it keeps every prefix it continued."""

    def __init__(self) -> None:
        from assay.rl_client.runs.think_demo import ThinkTokenizer

        self.tokenizer = ThinkTokenizer()
        self.continued: list[list[int]] = []

    def generate_ids(self, prompt_ids: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        out = []
        for prompt in prompt_ids:
            text = "ab</think>345"
            if params.max_new_tokens == 4:  # an exit's answer
                self.continued.append(list(prompt))
                thought = len(prompt) - len(self.tokenizer.encode("1+2=<think>")) - 1  # less the cue
                text = "345" if thought > 0 else "999"
            ids = [*self.tokenizer.encode_plain(text), self.tokenizer.eos_token_id]
            out.append(Completion(list(prompt), ids, text, [-0.5] * len(ids), False))
        return out


class AnswerIsRight(ShapingServer):
    """Correct when the answer after the one `</think>` is 345 (the verbose demo's parse)."""

    async def ascore_groups(self, groups: list[dict[str, Any]]) -> list[GroupOutcome]:
        from assay.rl_client.runs.think_demo import answer_of

        self.sent.extend(groups)
        out = []
        for index, group in enumerate(groups):
            gid, spec, split = shaping_parts(index, group)
            results = [Result.verdict(answer_of(item["response"]) == "345") for item, _ in split]
            out.append(group_outcome(gid, spec, split, results, SolveRates(None)))
        return out


def test_thinking_is_the_path_before_its_closing_tag() -> None:
    from assay.rl_client.serial import thinking_length

    assert thinking_length([5, 6, 7, 8, 9], [7], 5) == 2
    assert thinking_length([5, 6, 7, 8, 9], [7, 9], 5) == 5  # a tag of two tokens must match whole
    assert thinking_length([5, 6, 7, 8, 9], [7, 8], 5) == 2
    assert thinking_length([5, 6, 7, 8, 9], [], 5) == 5  # no tag: the whole body is thinking
    assert thinking_length([5, 6, 7, 8, 2], [2], 4) == 4  # a tag past the body (the end token) is not one


def test_s_grpo_cuts_only_inside_the_thinking_and_pays_the_papers_decay() -> None:
    # the path a, b, </think>, 3, 4, 5, end: 2 thinking tokens, so 3 cuts at round(2k/4) = 0, 1, 2; spread
    # over the whole body (6 tokens) they would be 2, 3, 4, two of them inside the answer
    cfg = TrainConfig(
        generate=GenerateConfig(group_size=4, max_new_tokens=12),
        control=ControlConfig(prompts_per_step=1),
        shaping=ShapingConfig(method="s_grpo", exit_cue="</think>", exit_tokens=4),
    )
    server, backend = AnswerIsRight(), ThinkingPathBackend()
    _, [group] = one_round(backend, server, cfg, [Problem("p", "1+2=<think>", "345")])
    assert [s.completion.text for s in group.samples] == [
        "</think>999",
        "a</think>345",
        "ab</think>345",
        "ab</think>345",
    ]
    assert group.exit_positions == [0, 1, 2, 7]
    tok = backend.tokenizer
    prompt = tok.encode("1+2=<think>")
    assert backend.continued == [prompt + tok.encode_plain(t + "</think>") for t in ("", "a", "ab")]
    # Dai et al.: the k-th correct exit in order earns 1/2^(k-1), a wrong one 0: exits at 1, 2 and the
    # whole path (7) are the 1st, 2nd and 3rd correct, the exit at 0 is wrong
    assert [s.reward for s in group.samples] == [0.0, 1.0, 0.5, 0.25]
    [sent] = server.sent
    assert [i["exit_position"] for i in sent["items"]] == [0, 1, 2, 7]
