"""Tree rollouts (issue 41): a prompt's responses sampled as a tree that shares prefixes, scored through
Assay's `POST /v1/trees`, and credited per node.

Growing (`grow`), every tree of a round together, one backend call per level:
- `segment` (TreePO: Li et al. 2025, *TreePO*, multimodal-art-projection/TreePO `recipe/treepo/`): the
  prompt forks into `roots` chains; a node generates `segment_tokens` tokens and forks into `fan_out`
  children, for `depth` levels, splitting the group's `group_size` leaves among its children; a node left
  with one leaf runs on to the budget. With `prune_duplicates`, dead branches are pruned: a child that
  ended exactly as an ended sibling did is dropped and its leaves go to a sibling still growing.
- `entropy` (TreeRL's EPTree: Hou et al. 2025, *TreeRL*, THUDM/TreeRL): `roots` whole chains; then,
  `iterations` times, every leaf's `forks` most uncertain tokens are forking points, and `fan_out` new
  chains grow from the prefix just before each (they re-draw the uncertain token). Uncertainty is the
  sampled token's -log p, a one-sample estimate of the entropy every backend reports.
- Answer forcing: a leaf that used the whole budget without ending gets `answer_cue` appended (tokens the
  policy did not choose: no loss) and `answer_tokens` more tokens to answer in.

Credit: the server gives each node a value and an advantage (docs/trees.md). Each node becomes one training
row, its ancestors' tokens as context without loss and its own tokens with its advantage, so a prefix shared
by many leaves is credited once. A node whose value is null (no ok leaf below it) gets weight 0.

Backends: `fork(prefixes, counts, params)`; the hf backend copies a prefix's KV cache to its children, the
vllm backends send the prefix as each child's prompt and rely on vLLM's prefix caching.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ConfigError
from assay.groups import group_stats
from assay.rl_client.config import TrainConfig, TreeConfig
from assay.rl_client.filter import RewardPipe, apply_results
from assay.rl_client.generate import (
    Completion,
    Group,
    Problem,
    Sample,
    SamplingParams,
    grouped,
    repeated,
)
from assay.trees import TreeOutcome


@dataclass(eq=False)
class Node:
    """One segment of a tree: the tokens generated after its parent's."""

    id: str
    parent: Node | None
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    action_mask: list[int] | None = None  # 0 for a forced answer cue; None: all the policy's
    ended: bool = False  # the end token closed it: nothing grows below
    children: list[Node] = field(default_factory=list)

    def path(self) -> list[Node]:
        """The nodes from the root's first child down to this one."""
        nodes, node = [], self
        while node.parent is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]

    @property
    def generated(self) -> int:
        """Tokens the policy generated in this segment (a forced cue is not generated)."""
        return len(self.token_ids) if self.action_mask is None else sum(self.action_mask)


@dataclass(eq=False)
class Tree:
    """One prompt's tree; the root is the prompt (no tokens)."""

    prompt_ids: list[int]
    root: Node = field(default_factory=lambda: Node("0", None))
    _count: int = 1

    def add(self, parent: Node, completion: Completion) -> Node:
        node = Node(
            str(self._count),
            parent,
            list(completion.token_ids),
            list(completion.logprobs),
            None if completion.action_mask is None else list(completion.action_mask),
            ended=not completion.truncated,
        )
        self._count += 1
        parent.children.append(node)
        return node

    def split(self, node: Node, at: int) -> Node:
        """Cut `node` after `at` tokens; the rest becomes its only child (which keeps its children)."""
        tail = Node(str(self._count), node, node.token_ids[at:], node.logprobs[at:], None, node.ended)
        if node.action_mask is not None:
            tail.action_mask, node.action_mask = node.action_mask[at:], node.action_mask[:at]
        self._count += 1
        tail.children = node.children
        for child in tail.children:
            child.parent = tail
        node.token_ids, node.logprobs, node.ended, node.children = (
            node.token_ids[:at],
            node.logprobs[:at],
            False,
            [tail],
        )
        return tail

    def nodes(self) -> Iterator[Node]:
        """Depth first, parents before children."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def leaves(self) -> list[Node]:
        return [n for n in self.nodes() if not n.children and n.parent is not None]

    def context(self, node: Node) -> list[int]:
        """The prompt and every ancestor's tokens: what `node`'s tokens were generated after."""
        ids = list(self.prompt_ids)
        for part in node.path()[:-1]:
            ids.extend(part.token_ids)
        return ids

    def prefix(self, node: Node) -> list[int]:
        return self.context(node) + node.token_ids if node.parent is not None else list(self.prompt_ids)

    @property
    def generated(self) -> int:
        return sum(n.generated for n in self.nodes())


def used(node: Node) -> int:
    """Response tokens from the root down to `node`, inclusive."""
    return sum(len(n.token_ids) for n in node.path())


def fork(
    backend: Any, prefixes: Sequence[list[int]], counts: Sequence[int], params: SamplingParams
) -> list[list[Completion]]:
    """`counts[i]` continuations of each prefix: the backend's own `fork` (which shares the prefix), else
    the prefix repeated through `generate_ids`."""
    if hasattr(backend, "fork"):
        return list(backend.fork(prefixes, counts, params))
    if not hasattr(backend, "generate_ids"):
        raise ConfigError(f"{type(backend).__name__} cannot continue from token ids; tree rollouts need it")
    return grouped(backend.generate_ids(repeated(prefixes, counts), params), counts)


def _split_evenly(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _expand(
    backend: Any, jobs: Sequence[tuple[Tree, Node, int, int]], temperature: float
) -> list[list[Completion]]:
    """(tree, node, children, tokens each) jobs, one backend call per distinct token count."""
    out: list[list[Completion]] = [[] for _ in jobs]
    for tokens in sorted({j[3] for j in jobs}):
        picked = [i for i, j in enumerate(jobs) if j[3] == tokens]
        prefixes = [jobs[i][0].prefix(jobs[i][1]) for i in picked]
        made = fork(backend, prefixes, [jobs[i][2] for i in picked], SamplingParams(temperature, tokens))
        for i, completions in zip(picked, made, strict=True):
            out[i] = completions
    return out


def grow_segments(
    backend: Any, trees: Sequence[Tree], leaves: int, tree: TreeConfig, budget: int, temperature: float
) -> None:
    """TreePO's fixed-length segments (see the module docstring); `leaves` per tree."""
    pending = [(t, t.root, leaves) for t in trees]  # (tree, node to fork, its leaves)
    level = 0
    while pending:
        jobs, quotas = [], []
        for t, node, quota in pending:
            share = _split_evenly(quota, min(tree.roots if node.parent is None else tree.fan_out, quota))
            left = budget - used(node)
            for forks_again in (True, False):  # children that fork again take a segment, others the rest
                part = [q for q in share if (q > 1 and level + 1 < tree.depth) == forks_again]
                if part:
                    tokens = min(tree.segment_tokens, left) if forks_again else left
                    jobs.append((t, node, len(part), tokens))
                    quotas.append((part, forks_again))
        made = _expand(backend, jobs, temperature)
        pending = []
        for (t, node, _, _), (part, forks_again), completions in zip(jobs, quotas, made, strict=True):
            grown = [(t.add(node, c), q) for c, q in zip(completions, part, strict=True)]
            growing = [
                (child, q) for child, q in grown if forks_again and not child.ended and used(child) < budget
            ]
            orphaned = 0
            if tree.prune_duplicates:
                orphaned = _prune(node, [child for child, _ in grown], {id(c): q for c, q in grown})
            if growing and orphaned:  # a pruned duplicate's leaves go to a sibling still growing
                growing[0] = (growing[0][0], growing[0][1] + orphaned)
            pending.extend((t, child, q) for child, q in growing)
        level += 1


def _prune(parent: Node, siblings: list[Node], quota: dict[int, int]) -> int:
    """Drop children that ended exactly as an earlier ended sibling did; the leaves they held."""
    seen: set[tuple[int, ...]] = set()
    lost = 0
    for child in siblings:
        if not child.ended:
            continue
        key = tuple(child.token_ids)
        if key in seen:
            parent.children.remove(child)
            lost += quota[id(child)]
        seen.add(key)
    return lost


def grow_entropy(
    backend: Any, trees: Sequence[Tree], tree: TreeConfig, budget: int, temperature: float
) -> None:
    """TreeRL's EPTree (see the module docstring)."""
    made = _expand(backend, [(t, t.root, tree.roots, budget) for t in trees], temperature)
    for t, completions in zip(trees, made, strict=True):
        for completion in completions:
            t.add(t.root, completion)
    for _ in range(tree.iterations):
        jobs = []
        for t in trees:
            for leaf in t.leaves():
                # forking at 0 would fork the parent; a position is a token the children re-draw
                candidates = sorted(range(1, len(leaf.token_ids)), key=lambda p: leaf.logprobs[p])
                offset, current = 0, leaf
                for at in sorted(candidates[: tree.forks]):
                    tail = t.split(current, at - offset)
                    jobs.append((t, current, tree.fan_out, budget - used(current)))
                    current, offset = tail, at
        made = _expand(backend, jobs, temperature)
        for (t, node, _, _), completions in zip(jobs, made, strict=True):
            for completion in completions:
                t.add(node, completion)


def force_answers(
    backend: Any, tokenizer: Any, trees: Sequence[Tree], tree: TreeConfig, budget: int, temperature: float
) -> None:
    """A leaf that used the budget without ending: the cue, then `answer_tokens` to answer in."""
    if not tree.answer_cue:
        return
    cue = list(tokenizer.encode_plain(tree.answer_cue))
    jobs = [(t, leaf) for t in trees for leaf in t.leaves() if not leaf.ended and used(leaf) >= budget]
    if not jobs:
        return
    made = fork(
        backend,
        [t.prefix(leaf) + cue for t, leaf in jobs],
        [1] * len(jobs),
        SamplingParams(temperature, tree.answer_tokens),
    )
    for (t, leaf), (completion,) in zip(jobs, made, strict=True):
        forced = Completion(
            prompt_ids=[],
            token_ids=cue + completion.token_ids,
            text="",
            logprobs=[0.0] * len(cue) + completion.logprobs,
            truncated=completion.truncated,
            action_mask=[0] * len(cue) + [1] * len(completion.token_ids),
        )
        t.add(leaf, forced)


def leaf_completion(t: Tree, leaf: Node, tokenizer: Any) -> Completion:
    """The whole response from the root to `leaf`, as an i.i.d. sample would have it."""
    path = leaf.path()
    tokens = [tok for n in path for tok in n.token_ids]
    masks = [m for n in path for m in (n.action_mask or [1] * len(n.token_ids))]
    eos = getattr(tokenizer, "eos_token_id", None)
    body = tokens[:-1] if leaf.ended and tokens and tokens[-1] == eos else tokens
    return Completion(
        prompt_ids=list(t.prompt_ids),
        token_ids=tokens,
        text=tokenizer.decode(body),
        logprobs=[lp for n in path for lp in n.logprobs],
        truncated=not leaf.ended,
        action_mask=None if all(masks) else masks,
    )


def tree_payload(problem: Problem, t: Tree, texts: Sequence[str], method: str, prompt: str) -> dict[str, Any]:
    """The tree as POST /v1/trees takes it: nodes with parents and lengths, leaves with their items."""
    nodes = [
        {"id": n.id, "parent": None if n.parent is None else n.parent.id, "length": n.generated}
        for n in t.nodes()
    ]
    leaves = [
        {
            "node": leaf.id,
            "item": {
                "id": f"{problem.id}/{k}",
                "task": problem.task,
                "prompt": prompt,
                "response": text,
                "reference": problem.reference,
                **problem.fields,
            },
        }
        for k, (leaf, text) in enumerate(zip(t.leaves(), texts, strict=True))
    ]
    return {"id": problem.id, "method": method, "nodes": nodes, "leaves": leaves}


def node_rows(t: Tree, outcome: TreeOutcome, version: int) -> list[Sample]:
    """One training row per node with tokens: its advantage on its own tokens, once."""
    credit = {n.id: n.advantage for n in outcome.nodes}
    rows = []
    for node in t.nodes():
        if node.parent is None or not node.token_ids:
            continue
        advantage = credit.get(node.id)
        completion = Completion(
            t.context(node), node.token_ids, "", node.logprobs, False, action_mask=node.action_mask
        )
        weight = 0.0 if advantage is None else 1.0  # unassigned credit is null: no gradient
        rows.append(Sample(completion, version, weight=weight, advantage=advantage or 0.0))
    return rows


def whiten(rows: Sequence[Sample]) -> list[float]:
    """TreePO's batch step (its recipe whitens advantages over the batch's response tokens): the rows'
    advantages minus their token-weighted mean, over their token-weighted std; masked rows stay 0."""
    live = [(r.advantage or 0.0, len(r.completion.token_ids)) for r in rows if r.weight > 0]
    tokens = sum(n for _, n in live)
    if tokens < 2:
        return [r.advantage or 0.0 if r.weight > 0 else 0.0 for r in rows]
    mean = sum(a * n for a, n in live) / tokens
    std = (sum(n * (a - mean) ** 2 for a, n in live) / tokens) ** 0.5
    return [((r.advantage or 0.0) - mean) / (std + 1e-8) if r.weight > 0 else 0.0 for r in rows]


class TreeRollouts:
    """Generate, score and credit one round of tree groups (`rollout: tree`)."""

    def __init__(self, backend: Any, pipe: RewardPipe, cfg: TrainConfig) -> None:
        self.backend = backend
        self.pipe = pipe
        self.cfg = cfg
        self.tokenizer: Any = getattr(backend, "tokenizer", None)
        if self.tokenizer is None:
            raise ConfigError(
                f"{type(backend).__name__} has no tokenizer; tree rollouts decode leaves with it"
            )
        self.generated = 0  # tokens generated so far (each shared prefix once)
        self.reward_wait_s = 0.0

    def sample_groups(self, problems: Sequence[Problem], version: int) -> list[Group]:
        tree, gen = self.cfg.tree, self.cfg.generate
        if any(p.mix for p in problems):
            raise ConfigError("tree rollouts do not mix rewards (Problem.mix); use rollout: group")
        trees = [Tree(list(self.tokenizer.encode(p.prompt))) for p in problems]
        if tree.branching == "segment":
            grow_segments(self.backend, trees, gen.group_size, tree, gen.max_new_tokens, gen.temperature)
        else:
            grow_entropy(self.backend, trees, tree, gen.max_new_tokens, gen.temperature)
        force_answers(self.backend, self.tokenizer, trees, tree, gen.max_new_tokens, gen.temperature)
        groups, payloads = [], []
        for problem, t in zip(problems, trees, strict=True):
            samples = [Sample(leaf_completion(t, leaf, self.tokenizer), version) for leaf in t.leaves()]
            groups.append(Group(problem, problem.prompt, samples))
            payloads.append(
                tree_payload(problem, t, [s.completion.text for s in samples], tree.method, problem.prompt)
            )
            self.generated += t.generated
        waited = time.perf_counter()
        outcomes = self.pipe.submit_trees(payloads).result()
        self.reward_wait_s += time.perf_counter() - waited
        for group, t, outcome in zip(groups, trees, outcomes, strict=True):
            if outcome.status != "ok":
                raise ValueError(f"Assay refused tree {outcome.id}: {outcome.reason}")
            apply_results(group.samples, outcome.results)
            group.stats = group_stats(outcome.results, [s.completion.text for s in group.samples])
            group.tree_rows = node_rows(t, outcome, version)
        return groups
