"""The `hf` backend: batched sampling from a transformers causal LM with a plain PyTorch loop.

Why not `model.generate`: the trainer needs the behaviour log-probability of every sampled token and a
sampling RNG it can checkpoint (exact resume), and a loop this small is easy to read. Prompts are
left-padded with explicit position ids; a KV cache keeps each new token O(1) model calls. The backend
shares the training model's module, so `sync_weights` has nothing to copy. Tree rollouts (`fork`) prefill
a node's prefix once and copy its KV cache to every child's row.

Meant for CPU tests and demos with tiny models; use the `vllm` backend for real models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch

from assay.rl_client.generate import Completion, SamplingParams, grouped


class Tokenizer(Protocol):
    """What the backend needs; a `transformers` tokenizer and the demo's character tokenizer both fit."""

    eos_token_id: int
    pad_token_id: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


class HFBackend:
    def __init__(self, model: Any, tokenizer: Tokenizer, *, seed: int = 0, batch_size: int = 1024) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.generator = torch.Generator().manual_seed(seed)

    def sync_weights(self, model: Any) -> None:
        self.model = model

    def state_dict(self) -> dict[str, Any]:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generator.set_state(state["generator"])

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        """One completion per prompt. `temperature == 0` is greedy decoding."""
        completions: list[Completion] = []
        was_training = self.model.training
        self.model.eval()
        try:
            for start in range(0, len(prompts), self.batch_size):
                completions.extend(self._generate(prompts[start : start + self.batch_size], params))
        finally:
            self.model.train(was_training)
        return completions

    def generate_ids(self, prompt_ids: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        """Like `generate`, from token ids (partial rollouts continue a response from its tokens)."""
        completions: list[Completion] = []
        was_training = self.model.training
        self.model.eval()
        try:
            for start in range(0, len(prompt_ids), self.batch_size):
                chunk = [list(ids) for ids in prompt_ids[start : start + self.batch_size]]
                completions.extend(self._generate_ids(chunk, params))
        finally:
            self.model.train(was_training)
        return completions

    def fork(
        self, prefixes: Sequence[list[int]], counts: Sequence[int], params: SamplingParams
    ) -> list[list[Completion]]:
        """`counts[i]` continuations of `prefixes[i]` (a tree node's children): each prefix is run through
        the model once and its KV cache is copied to its children's rows, so a shared prefix costs one
        prefill however many children it has."""
        if len(prefixes) != len(counts) or any(c < 1 for c in counts):
            raise ValueError("fork needs one count >= 1 per prefix")
        flat: list[Completion] = []
        was_training = self.model.training
        self.model.eval()
        try:
            start = 0
            while start < len(prefixes):  # whole prefixes per chunk, about batch_size children each
                stop, rows = start, 0
                while stop < len(prefixes) and (stop == start or rows + counts[stop] <= self.batch_size):
                    rows += counts[stop]
                    stop += 1
                chunk = [list(p) for p in prefixes[start:stop]]
                flat.extend(self._generate_ids(chunk, params, list(counts[start:stop])))
                start = stop
        finally:
            self.model.train(was_training)
        return grouped(flat, counts)

    def _generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        """Prompts as text; `params.stop` ends a row at a stop string (a tool call closing)."""
        return self._generate_ids([list(self.tokenizer.encode(p)) for p in prompts], params)

    @torch.no_grad()
    def _generate_ids(
        self, encoded: list[list[int]], params: SamplingParams, counts: list[int] | None = None
    ) -> list[Completion]:
        """`counts`: row i is prefilled once and then sampled `counts[i]` times (`fork`)."""
        n, width = len(encoded), max(len(e) for e in encoded)
        pad, eos = self.tokenizer.pad_token_id, self.tokenizer.eos_token_id
        ids = torch.full((n, width), pad, dtype=torch.long)
        attention = torch.zeros((n, width), dtype=torch.long)
        for i, row in enumerate(encoded):
            ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
            attention[i, width - len(row) :] = 1
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        done = torch.zeros(n, dtype=torch.bool)
        stops = _StopWatch(self.tokenizer, params.stop, n)
        tokens: list[torch.Tensor] = []
        logps: list[torch.Tensor] = []
        past = None
        for _ in range(params.max_new_tokens):
            out = self.model(
                input_ids=ids,
                attention_mask=attention,
                position_ids=positions,
                past_key_values=past,
                use_cache=True,
            )
            past = out.past_key_values
            logits = out.logits[:, -1].float()
            if counts is not None:  # after the prefill: each prefix's cache row serves its children
                index = torch.repeat_interleave(torch.arange(n), torch.tensor(counts))
                past.reorder_cache(index)
                logits, attention, positions = logits[index], attention[index], positions[index]
                encoded = [encoded[i] for i in index.tolist()]
                n, counts = len(encoded), None
                done = torch.zeros(n, dtype=torch.bool)
                stops = _StopWatch(self.tokenizer, params.stop, n)
            if params.temperature == 0:
                logp_all = torch.log_softmax(logits, dim=-1)
                chosen = logp_all.argmax(-1)
            else:
                logp_all = torch.log_softmax(logits / params.temperature, dim=-1)
                chosen = torch.multinomial(logp_all.exp(), 1, generator=self.generator).squeeze(-1)
            chosen = torch.where(done, torch.full_like(chosen, pad), chosen)
            tokens.append(chosen)
            logps.append(logp_all.gather(-1, chosen[:, None]).squeeze(-1))
            done = done | (chosen == eos) | stops.update(chosen, done)
            if bool(done.all()):
                break
            ids = chosen[:, None]
            attention = torch.cat([attention, torch.ones((n, 1), dtype=torch.long)], dim=-1)
            positions = positions[:, -1:] + 1
        return self._completions(encoded, torch.stack(tokens, 1), torch.stack(logps, 1), eos, stops)

    def _completions(
        self,
        encoded: list[list[int]],
        tokens: torch.Tensor,
        logps: torch.Tensor,
        eos: int,
        stops: _StopWatch,
    ) -> list[Completion]:
        completions = []
        for i, prompt_ids in enumerate(encoded):
            row = tokens[i].tolist()
            end = row.index(eos) + 1 if eos in row else len(row)
            if stops.hit[i] is not None:
                end = min(end, len(stops.rows[i]))
            response = row[:end]
            body = response[:-1] if response and response[-1] == eos else response
            completions.append(
                Completion(
                    prompt_ids=prompt_ids,
                    token_ids=response,
                    text=self.tokenizer.decode(body),
                    logprobs=logps[i, :end].tolist(),
                    truncated=eos not in response and stops.hit[i] is None,
                    stop=stops.hit[i],
                )
            )
        return completions


class _StopWatch:
    """Which rows' text now contains a stop string. Only the newest tokens are decoded each step, as
    many as give `max(len(stop))` characters: they hold any stop string the newest token completed."""

    def __init__(self, tokenizer: Tokenizer, stop: Sequence[str], n: int) -> None:
        self.tokenizer = tokenizer
        self.stop = [s for s in stop if s]
        self.window = max((len(s) for s in self.stop), default=0)
        self.rows: list[list[int]] = [[] for _ in range(n)]
        self.hit: list[str | None] = [None] * n

    def update(self, chosen: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
        stopped = torch.zeros_like(done)
        if not self.stop:
            return stopped

        for i, token in enumerate(chosen.tolist()):
            if bool(done[i]):
                continue
            self.rows[i].append(token)
            tail = self._tail(self.rows[i])
            found = next((s for s in self.stop if s in tail), None)
            if found is not None:
                self.hit[i] = found
                stopped[i] = True
        return stopped

    def _tail(self, row: list[int]) -> str:
        """The text of the newest tokens, at least `window` characters of it where the row has them
        (special tokens decode to nothing, so a fixed count of tokens may not be enough)."""
        take = self.window
        while True:
            tail = self.tokenizer.decode(row[-take:])
            if len(tail) >= self.window or take >= len(row):
                return tail
            take *= 2
