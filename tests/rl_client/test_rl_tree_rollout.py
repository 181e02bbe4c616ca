"""Tree rollouts (issue 41 item 2): prefixes shared and generated once, KV reuse exact, node credit on
each segment's tokens once, the config's checks, and a short training run against a live service."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
import torch

from assay.client import AssayClient
from assay.rl_client.backends.hf import HFBackend
from assay.rl_client.config import ControlConfig, GenerateConfig, TrainConfig, TreeConfig
from assay.rl_client.filter import RewardPipe, ServiceRewards
from assay.rl_client.generate import Completion, Problem, Sample, SamplingParams
from assay.rl_client.loss import group_advantages
from assay.rl_client.policy import collate
from assay.rl_client.runs.config import apply_override, validate
from assay.rl_client.runs.demo import EOS, PAD, CharTokenizer, addition_problems, build_model
from assay.rl_client.runs.sft import sft_step
from assay.rl_client.trainer import Trainer
from assay.rl_client.tree_rollout import (
    Node,
    Tree,
    force_answers,
    grow_entropy,
    grow_segments,
    leaf_completion,
    node_rows,
    tree_payload,
    whiten,
)
from assay.trees import TreeOutcome


class CountingBackend:
    """The hf backend, counting the tokens it generates."""

    def __init__(self, inner: HFBackend) -> None:
        self.inner = inner
        self.tokenizer = inner.tokenizer
        self.tokens = 0

    def fork(self, prefixes: Sequence[list[int]], counts: Sequence[int], params: SamplingParams) -> Any:
        made = self.inner.fork(prefixes, counts, params)
        self.tokens += sum(len(c.token_ids) for group in made for c in group)
        return made

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        made = self.inner.generate(prompts, params)
        self.tokens += sum(len(c.token_ids) for c in made)
        return made


def _backend(seed: int = 0) -> HFBackend:
    tokenizer = CharTokenizer()
    return HFBackend(build_model(tokenizer, seed, width=32), tokenizer, seed=seed)


def _descendants(node: Node) -> list[Node]:
    out, stack = [], list(node.children)
    while stack:
        child = stack.pop()
        out.append(child)
        stack.extend(child.children)
    return out


@pytest.mark.slow
def test_children_continue_their_parents_tokens_and_a_prefix_is_generated_once() -> None:
    backend = CountingBackend(_backend())
    prompts = [p.prompt for p in addition_problems(0)[0][:4]]
    trees = [Tree(backend.tokenizer.encode(p)) for p in prompts]
    grow_segments(backend, trees, 8, TreeConfig(roots=2, fan_out=2, depth=3, segment_tokens=1), 4, 1.0)
    tree_tokens = backend.tokens
    for t in trees:
        assert 1 <= len(t.leaves()) <= 8
        for node in t.nodes():
            if node.parent is None:
                continue
            prefix = t.prefix(node)
            for below in _descendants(node):
                assert t.prefix(below)[: len(prefix)] == prefix
        assert sum(n.generated for n in t.nodes()) == t.generated
    assert tree_tokens == sum(t.generated for t in trees)
    backend.tokens = 0
    backend.generate([p for p in prompts for _ in range(8)], SamplingParams(1.0, 4))
    iid_tokens = backend.tokens
    assert tree_tokens < 0.8 * iid_tokens  # 2 + 4 + 8 x 2 per tree against 8 x 4 (an untrained model)


def test_entropy_forks_start_before_the_least_likely_token() -> None:
    backend = _backend(1)
    trees = [Tree(backend.tokenizer.encode("12+34="))]
    config = TreeConfig(branching="entropy", roots=1, fan_out=2, forks=1, iterations=1)
    grow_entropy(backend, trees, config, 4, 1.0)
    (t,) = trees
    (chain,) = t.root.children
    assert len(chain.children) == 3  # the original tail plus fan_out new chains
    tail = chain.children[0]
    whole = chain.logprobs + tail.logprobs
    assert len(chain.token_ids) == min(range(1, len(whole)), key=lambda p: whole[p])


def test_a_forked_kv_cache_samples_what_regenerating_the_prefix_does() -> None:
    backend = _backend(2)
    prefixes = [backend.tokenizer.encode("7+8="), backend.tokenizer.encode("12+34=5")]
    greedy = SamplingParams(0.0, 5)
    forked = backend.fork(prefixes, [3, 2], greedy)
    fresh = backend.generate_ids(prefixes, greedy)
    assert [len(children) for children in forked] == [3, 2]
    for children, alone in zip(forked, fresh, strict=True):
        for child in children:
            assert child.prompt_ids == alone.prompt_ids
            assert child.token_ids == alone.token_ids
            assert child.logprobs == pytest.approx(alone.logprobs, abs=1e-5)


def _hand_tree(tokenizer: CharTokenizer) -> tuple[Tree, dict[str, Node]]:
    """prompt -> a "1" -> {b "2<eos>", c "3<eos>"}, prompt -> d "12<eos>"; the answer is 12."""
    t = Tree(tokenizer.encode("05+07="))

    def add(parent: Node, text: str, ended: bool) -> Node:
        ids = [tokenizer.encode_plain(ch)[0] for ch in text] + ([EOS] if ended else [])
        return t.add(parent, Completion([], ids, "", [-0.5] * len(ids), truncated=not ended))

    a = add(t.root, "1", False)
    nodes = {"a": a, "b": add(a, "2", True), "c": add(a, "3", True), "d": add(t.root, "12", True)}
    return t, nodes


@pytest.mark.slow
def test_each_segment_gets_its_nodes_treerl_advantage_once(assay_service: str) -> None:
    tokenizer = CharTokenizer()
    t, nodes = _hand_tree(tokenizer)
    problem = Problem("q", "05+07=", "12")
    texts = [leaf_completion(t, leaf, tokenizer).text for leaf in t.leaves()]
    assert texts == ["12", "13", "12"]
    pipe = RewardPipe(ServiceRewards(AssayClient(assay_service)))
    try:
        (outcome,) = pipe.submit_trees([tree_payload(problem, t, texts, "treerl", problem.prompt)]).result()
    finally:
        pipe.close()
    rows = node_rows(t, outcome, version=0)
    # V(root) = 2/3, V(a) = 1/2, V(b) = V(d) = 1, V(c) = 0; TreeRL: (GA + LA) / sqrt(|L(n)|)
    root, a = 2 / 3, 1 / 2
    expected = {
        "a": ((a - root) + (a - root)) / math.sqrt(2),
        "b": (1 - root) + (1 - a),
        "c": (0 - root) + (0 - a),
        "d": (1 - root) + (1 - root),
    }
    batch = collate(rows, [r.advantage or 0.0 for r in rows], PAD)
    per_token = batch.advantages[:, None] * batch.mask
    credited = {name: per_token[i][batch.mask[i] > 0].tolist() for i, name in enumerate(["a", "b", "c", "d"])}
    for name, node in nodes.items():
        assert credited[name] == pytest.approx([expected[name]] * len(node.token_ids), abs=1e-6)
    # the shared "1" of a is trained in one row, not once per leaf below it
    assert int(batch.mask.sum().item()) == sum(len(n.token_ids) for n in nodes.values())


def test_a_node_without_an_ok_leaf_gets_no_gradient() -> None:
    tokenizer = CharTokenizer()
    t, _ = _hand_tree(tokenizer)
    credit = [
        {
            "id": n.id,
            "parent": None if n.parent is None else n.parent.id,
            "value": None,
            "advantage": None,
            "leaves": 0,
        }
        for n in t.nodes()
    ]
    credit[2].update(value=1.0, advantage=0.5, leaves=1)  # b alone was scored
    rows = node_rows(t, TreeOutcome.model_validate({"nodes": credit}), version=0)
    assert [r.weight for r in rows] == [0.0, 1.0, 0.0, 0.0]
    assert [r.advantage for r in rows] == [0.0, 0.5, 0.0, 0.0]
    assert collate(rows, [0.0, 0.5, 0.0, 0.0], PAD).mask[[0, 2, 3]].sum().item() == 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"generate": GenerateConfig(hint_fraction=0.5)}, "generate.hint_fraction"),
        ({"tree": TreeConfig(roots=1, fan_out=2, depth=2)}, "fewer than generate.group_size"),
        ({"tree": TreeConfig(segment_tokens=40, depth=3)}, "past generate.max_new_tokens"),
        ({"control": ControlConfig(adaptive_group=True)}, "control.adaptive_group"),
    ],
)
def test_a_tree_config_that_cannot_work_says_what_to_change(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrainConfig(rollout="tree", **changes)


def test_tree_options_are_checked() -> None:
    with pytest.raises(ValueError, match="fan_out must be at least 2"):
        TreeConfig(fan_out=1)
    with pytest.raises(ValueError, match="treerl, treerpo or treepo"):
        TreeConfig(method="grpo")  # type: ignore[arg-type]


def test_algorithm_rollout_in_a_run_config_sets_the_trainers_rollout() -> None:
    base = {"model": {"path": "m"}, "data": {"train": "t.jsonl"}}
    cfg = validate({**base, "algorithm": {"name": "grpo", "rollout": "tree", "tree": {"method": "treerl"}}})
    assert (cfg.algorithm, cfg.train.rollout, cfg.train.tree.method) == ("grpo", "tree", "treerl")
    data: dict[str, Any] = {**base, "algorithm": "grpo"}
    apply_override(data, "algorithm.rollout=tree")
    assert validate(data).train.rollout == "tree"
    assert validate(base).train.rollout == "group"  # the default stays i.i.d. groups
    with pytest.raises(ValueError, match="unknown field"):
        validate({**base, "algorithm": {"name": "grpo", "rolout": "tree"}})


@pytest.mark.slow
def test_a_short_training_run_with_tree_rollouts_takes_steps(assay_service: str) -> None:
    tokenizer = CharTokenizer()
    # one-digit answers after 15 supervised steps: about 1 sample in 10 is right, so trees get credit
    train = [Problem(f"p{d}", f"00+0{d}=", str(d)) for d in range(10)]
    model = build_model(tokenizer, seed=0, width=32)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(15):
        sft_step(
            model,
            optimizer,
            [(tokenizer.encode(p.prompt), tokenizer.encode_answer(p.reference)) for p in train],
            PAD,
        )
    backend = HFBackend(model, tokenizer, seed=0)
    cfg = TrainConfig(
        steps=2,
        lr=3e-4,
        generate=GenerateConfig(group_size=8, max_new_tokens=4),
        control=ControlConfig(prompts_per_step=6, dynamic_sampling=False),
        rollout="tree",
        tree=TreeConfig(method="treepo"),
    )
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    rewards = ServiceRewards(AssayClient(assay_service))
    trainer = Trainer(model, backend, rewards, train, cfg, pad_id=PAD)
    try:
        records = trainer.train()
    finally:
        trainer.close()
    assert [r["step"] for r in records] == [1, 2]
    assert all(0 < r["tokens_per_group"] < 8 * 4 for r in records)
    assert rewards.requests >= 2
    assert sum(r["reward"] for r in records) > 0  # some leaves were right: the loss had credit to use
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())


class SameAnswerBackend:
    """Every continuation is "5" and the end token: every sibling duplicates every other."""

    tokenizer = CharTokenizer()

    def fork(self, prefixes: Sequence[list[int]], counts: Sequence[int], params: SamplingParams) -> Any:
        five = self.tokenizer.encode_plain("5")[0]
        return [
            [Completion(list(p), [five, EOS], "5", [-0.1, -0.1], False) for _ in range(c)]
            for p, c in zip(prefixes, counts, strict=True)
        ]


def test_pruning_drops_an_ended_duplicate_only_when_asked() -> None:
    backend = SameAnswerBackend()
    kept, pruned = Tree([1]), Tree([1])
    grow_segments(backend, [kept], 8, TreeConfig(roots=2), 4, 1.0)
    grow_segments(backend, [pruned], 8, TreeConfig(roots=2, prune_duplicates=True), 4, 1.0)
    assert len(kept.leaves()) == 2
    assert len(pruned.leaves()) == 1


def test_treepo_whitening_is_token_weighted_and_skips_masked_rows() -> None:
    def row(advantage: float, tokens: int, weight: float = 1.0) -> Sample:
        return Sample(
            Completion([1], [3] * tokens, "", [0.0] * tokens, False), 0, weight=weight, advantage=advantage
        )

    rows = [row(1.0, 1), row(-1.0, 3), row(5.0, 2, weight=0.0)]
    mean = (1.0 * 1 - 1.0 * 3) / 4
    std = math.sqrt((1 * (1.0 - mean) ** 2 + 3 * (-1.0 - mean) ** 2) / 4)
    assert whiten(rows) == pytest.approx([(1.0 - mean) / std, (-1.0 - mean) / std, 0.0], rel=1e-6)


@pytest.mark.slow
def test_a_flat_tree_credited_by_treerpo_gets_grpos_advantages(assay_service: str) -> None:
    tokenizer = CharTokenizer()
    t = Tree(tokenizer.encode("05+07="))
    for text in ("12", "13", "12", "7", "12"):
        ids = [tokenizer.encode_plain(ch)[0] for ch in text] + [EOS]
        t.add(t.root, Completion([], ids, "", [-0.5] * len(ids), truncated=False))
    problem = Problem("q", "05+07=", "12")
    texts = [leaf_completion(t, leaf, tokenizer).text for leaf in t.leaves()]
    pipe = RewardPipe(ServiceRewards(AssayClient(assay_service)))
    try:
        (outcome,) = pipe.submit_trees([tree_payload(problem, t, texts, "treerpo", problem.prompt)]).result()
    finally:
        pipe.close()
    rows = node_rows(t, outcome, version=0)
    expected = group_advantages([1.0, 0.0, 1.0, 0.0, 1.0], scale_std=True)
    assert [r.advantage for r in rows] == pytest.approx(expected, abs=1e-5)


def test_a_leaf_at_the_budget_is_forced_to_answer_after_the_cue() -> None:
    backend = SameAnswerBackend()
    tokenizer = backend.tokenizer
    t = Tree(tokenizer.encode("05+07="))
    one = tokenizer.encode_plain("1")[0]
    t.add(t.root, Completion([], [one, one], "", [-0.2, -0.2], truncated=True))  # used the budget of 2
    t.add(t.root, Completion([], [one, EOS], "", [-0.2, -0.2], truncated=False))  # ended: left alone
    force_answers(backend, tokenizer, [t], TreeConfig(answer_cue="=", answer_tokens=3), 2, 1.0)
    forced, ended = t.leaves()
    done = leaf_completion(t, forced, tokenizer)
    assert done.text == "11=5" and not done.truncated
    assert done.action_mask == [1, 1, 0, 1, 1]  # the cue is not the policy's
    assert leaf_completion(t, ended, tokenizer).text == "1"
    rows = node_rows(t, TreeOutcome.model_validate({"nodes": []}), version=0)
    assert [r.completion.action_mask for r in rows] == [None, [0, 1, 1], None]
