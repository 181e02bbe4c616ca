"""S-GRPO serial groups (Dai et al. 2025, "S-GRPO: Early Exit via Reinforcement Learning in Reasoning
Models"): one path per prompt, cut at `generate.group_size - 1` positions spread evenly over its
thinking, the tokens before its first `shaping.thinking_end` (`</think>`; the whole path, its end token
aside, when it has none: a model without a thinking block, or a path cut by the length limit while
thinking). The paper truncates inside the thoughts T_1..T_n only (P_i = T_i, i ~ Uniform(1, n)); a cut in
the answer would "exit" after the answer has begun. At each cut the exit cue (`shaping.exit_cue`, the
paper's "Time is limited, stop thinking and start answering.\\n</think>\\n\\n") is forced and the policy
answers in `shaping.exit_tokens`. The exits and the whole path form the serial group, sent with
`shaping: {method: s_grpo}` and each member's `exit_position`; the server gives the k-th correct exit
decay^(k-1) and a wrong one 0 (`assay.groups.shaping.s_grpo`), and the advantages are taken over that
group.

The cue is the environment's, not the policy's: its tokens are masked out of the loss, as a tool
observation is. Ours, not the paper's: the cuts are evenly spaced (round(T k / (m + 1)), k = 1..m) where
the paper draws them at random, so a group always spans its thinking. Not here: S-GRPO's sampling of
several paths per prompt (one path, as in its Fig. 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.errors import ConfigError
from assay.rl_client.config import TrainConfig
from assay.rl_client.generate import Completion, Group, Problem, Sample, SamplingParams
from assay.rl_client.tree_rollout import fork


def cut_positions(length: int, exits: int) -> list[int]:
    """`exits` cuts spread evenly over a path of `length` tokens, round(length * k / (exits + 1)) for
    k = 1..exits, in order (a short path repeats positions: each cut still answers on its own)."""
    return [round(length * k / (exits + 1)) for k in range(1, exits + 1)]


def thinking_length(tokens: Sequence[int], end: Sequence[int], body: int) -> int:
    """The tokens before the first occurrence of `end` (the closing think tag) within the path's `body`
    tokens; all of `body` when `end` is empty or absent."""
    if end:
        for at in range(body - len(end) + 1):
            if list(tokens[at : at + len(end)]) == list(end):
                return at
    return body


def continuing_tokenizer(backend: Any, method: str) -> Any:
    """The tokenizer of a backend that can continue a sequence from token ids (`generate_ids`), which
    S-GRPO's exits and AdaptThink's forced prefix need; ConfigError naming `method` for any other."""
    tokenizer = getattr(backend, "tokenizer", None)
    if tokenizer is None or not hasattr(backend, "generate_ids"):
        raise ConfigError(
            f"{type(backend).__name__} cannot continue a sequence from token ids; {method} needs a backend "
            "with a tokenizer and generate_ids (hf, vllm, vllm_server)"
        )
    return tokenizer


class SerialRollouts:
    """Generate one round of serial groups (`shaping.method: s_grpo`); scoring is the caller's."""

    def __init__(self, backend: Any, cfg: TrainConfig) -> None:
        self.backend = backend
        self.cfg = cfg
        self.tokenizer: Any = continuing_tokenizer(backend, "s_grpo")
        self.generated = 0  # tokens generated so far (paths and exit answers)
        self.thinking_end = self._encoded(cfg.shaping.thinking_end)

    def sample_groups(self, problems: Sequence[Problem], version: int) -> list[Group]:
        gen, shaping = self.cfg.generate, self.cfg.shaping
        prompts = [list(self.tokenizer.encode(p.prompt)) for p in problems]
        paths = self.backend.generate_ids(prompts, SamplingParams(gen.temperature, gen.max_new_tokens))
        cue = list(self.tokenizer.encode_plain(shaping.exit_cue)) if shaping.exit_cue else []
        cuts = [cut_positions(self._thinking(path), gen.group_size - 1) for path in paths]
        prefixes = [
            prompt + path.token_ids[:at] + cue
            for prompt, path, at_list in zip(prompts, paths, cuts, strict=True)
            for at in at_list
        ]
        answers = iter(fork(self.backend, prefixes, [1] * len(prefixes), self._answer_params()))
        groups = []
        for problem, prompt, path, at_list in zip(problems, prompts, paths, cuts, strict=True):
            replies = [next(answers)[0] for _ in at_list]
            exits = [self._exit(prompt, path, at, cue, r) for at, r in zip(at_list, replies, strict=True)]
            self.generated += len(path.token_ids) + sum(len(r.token_ids) for r in replies)
            groups.append(
                Group(
                    problem,
                    problem.prompt,
                    [Sample(c, version) for c in [*exits, path]],
                    exit_positions=[*at_list, len(path.token_ids)],
                )
            )
        return groups

    def _encoded(self, text: str) -> list[int]:
        """`text` as token ids, or [] when this tokenizer cannot spell it (a model without the tag)."""
        ids = list(self.tokenizer.encode_plain(text)) if text else []
        return ids if ids and self.tokenizer.decode(ids) == text else []

    def _thinking(self, path: Completion) -> int:
        """How many of the path's tokens are thinking: where its cuts may fall."""
        return thinking_length(path.token_ids, self.thinking_end, self._body(path))

    def _body(self, path: Completion) -> int:
        """The path's length without its end token: a cut after the end would answer past the end."""
        ended = not path.truncated and path.token_ids[-1:] == [getattr(self.tokenizer, "eos_token_id", None)]
        return len(path.token_ids) - ended

    def _answer_params(self) -> SamplingParams:
        return SamplingParams(self.cfg.generate.temperature, self.cfg.shaping.exit_tokens)

    def _exit(
        self, prompt: list[int], path: Completion, at: int, cue: list[int], answer: Completion
    ) -> Completion:
        """The path's first `at` tokens, the forced cue (masked) and the answer, as one response."""
        tokens = path.token_ids[:at] + cue + answer.token_ids
        eos = getattr(self.tokenizer, "eos_token_id", None)
        body = tokens[:-1] if not answer.truncated and tokens and tokens[-1] == eos else tokens
        return Completion(
            prompt_ids=list(prompt),
            token_ids=tokens,
            text=self.tokenizer.decode(body),
            logprobs=path.logprobs[:at] + [0.0] * len(cue) + answer.logprobs,
            truncated=answer.truncated,
            action_mask=[1] * at + [0] * len(cue) + [1] * len(answer.token_ids) if cue else None,
        )
