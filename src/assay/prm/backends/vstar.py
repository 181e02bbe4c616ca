"""A V-STaR verifier served in process: `settings.prm.format: vstar`, `settings.prm.model`: the directory
`assay train` writes for a star/rft run (`<run>/verifier`, `assay.rl_client.verifier.save`).

V-STaR (Hosseini et al. 2024, arXiv:2402.06457) trains the verifier with DPO against a reference model
and ranks candidates by the implicit reward `beta * (log pv(y|x) - log pref(y|x))`. The directory holds
the verifier (a causal LM and its tokenizer), `reference/` (the model it started from) and `vstar.json`
(`beta`, `add_special_tokens`: how the prompt is encoded, as the policy saw it). A candidate is the
prompt's tokens, then the response's and the end token; both models score the response tokens.

The result's reward is `sigmoid(score)`, in [0, 1] like every `prm` reward and in the same order as the
score (best-of-K picks the same candidate); `details.vstar_score` is the score itself. Rows are right
padded, so a candidate's score does not depend on the others in its batch. torch and transformers are
imported when the model loads.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.prm.backends.base import PrmBadInput, PrmUnavailable, StepRequest, StepScores
from assay.prm.backends.in_process import InProcessBackend

CONFIG_FILE = "vstar.json"  # the names `assay.rl_client.verifier.save` writes
REFERENCE_DIR = "reference"


@dataclass(frozen=True)
class Encoded:
    input_ids: list[int]
    prompt_length: int


@dataclass
class _Loaded:
    torch: Any
    tokenizer: Any
    verifier: Any
    reference: Any
    beta: float
    add_special_tokens: bool
    eos_id: int
    pad_id: int
    max_length: int


class VStarBackend(InProcessBackend[Encoded, _Loaded]):
    """Loads the verifier and its reference on first use (in the batcher's thread); scores batches."""

    what = "V-STaR verifier"
    batcher_name = "assay-vstar-batcher"

    def _load_model(self) -> _Loaded:
        import torch
        import transformers

        if not self.settings.model:
            raise PrmUnavailable("no verifier configured: set settings.prm.model (ASSAY_PRM__MODEL)")
        root = Path(self.settings.model)
        if not (root / CONFIG_FILE).exists():
            raise PrmUnavailable(f"{root} has no {CONFIG_FILE}: not a V-STaR verifier directory")
        meta = json.loads((root / CONFIG_FILE).read_text(encoding="utf-8"))
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(root))
        models = [
            transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
            for path in (root, root / REFERENCE_DIR)
        ]
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        limit = getattr(models[0].config, "max_position_embeddings", None) or self.settings.max_tokens
        return _Loaded(
            torch, tokenizer, models[0], models[1], float(meta["beta"]), bool(meta["add_special_tokens"]),
            int(tokenizer.eos_token_id), int(pad), min(limit, self.settings.max_tokens),
        )  # fmt: skip

    def encode(self, request: StepRequest) -> Encoded:
        loaded = self._require()
        tokenizer = loaded.tokenizer
        prompt = list(tokenizer(request.prompt, add_special_tokens=loaded.add_special_tokens)["input_ids"])
        response = list(tokenizer("".join(request.steps), add_special_tokens=False)["input_ids"])
        ids = [*prompt, *response, loaded.eos_id]
        if len(ids) > loaded.max_length:
            raise PrmBadInput(f"the input is {len(ids)} tokens; this model takes at most {loaded.max_length}")
        if not prompt:
            raise PrmBadInput("the prompt encodes to no tokens: the first response token has no context")
        return Encoded(ids, len(prompt))

    def forward(self, batch: list[Encoded]) -> list[StepScores]:
        loaded = self._require()
        torch = loaded.torch
        width = max(len(e.input_ids) for e in batch)
        ids = torch.full((len(batch), width), loaded.pad_id, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width - 1))
        for row, encoded in enumerate(batch):
            ids[row, : len(encoded.input_ids)] = torch.tensor(encoded.input_ids, dtype=torch.long)
            attention[row, : len(encoded.input_ids)] = 1
            mask[row, encoded.prompt_length - 1 : len(encoded.input_ids) - 1] = 1.0  # t predicts t+1
        with torch.inference_mode():
            sums = []
            for model in (loaded.verifier, loaded.reference):
                logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
                logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
                sums.append((logp * mask).sum(-1))
            ratio = (sums[0] - sums[1]).double().tolist()
        out = []
        for encoded, value in zip(batch, ratio, strict=True):
            score = loaded.beta * value
            details = {"vstar_score": score, "tokens": len(encoded.input_ids)}
            out.append(StepScores((_sigmoid(score),), details))
        return out


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
