"""The Qwen2.5-Math-PRM architecture for transformers: a Qwen2 backbone and a two-layer token head.

Why this exists: transformers ships no class for `Qwen2ForProcessRewardModel`; the real checkpoints load it
with `trust_remote_code`, i.e. by running code from the model repository. Assay never runs downloaded code,
so the forward pass is written here. The parameter names match the released checkpoints and what vLLM's
`qwen2_rm.py` loads: `model.*` (a `Qwen2Model`), `score.0` (H x H, with bias), ReLU, `score.2`
(num_labels x H, with bias). A checkpoint saved from this class is therefore servable by vLLM as is.

Imported only by the transformers backend (it imports torch at module level).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import Qwen2Config, Qwen2Model, Qwen2PreTrainedModel

ARCHITECTURE = "Qwen2ForProcessRewardModel"


class Qwen2ForProcessRewardModel(Qwen2PreTrainedModel):
    """Per-token logits over `num_labels` classes (2 for the Qwen PRMs: wrong, right)."""

    # Some PRM checkpoints still carry the language-model head they were fine-tuned from (vLLM skips it too).
    _keys_to_ignore_on_load_unexpected = [r"^lm_head\."]  # noqa: RUF012 - transformers' class attribute

    def __init__(self, config: Qwen2Config) -> None:
        super().__init__(config)
        self.model = Qwen2Model(config)
        self.score = nn.Sequential(
            nn.Linear(config.hidden_size, config.hidden_size),
            nn.ReLU(),
            nn.Linear(config.hidden_size, int(config.num_labels or 2)),
        )
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> torch.Tensor:
        """Logits of shape (batch, sequence, num_labels)."""
        hidden = self.model(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
        ).last_hidden_state
        return self.score(hidden)
