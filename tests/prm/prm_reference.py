"""An independent forward pass through a saved tiny checkpoint, in float64 and plain torch.

Why: the backend's scores must be checked against something that shares none of its code paths, neither
transformers' modelling code nor its tokenizer wrapper or chat templating. This reads `model.safetensors`
directly, tokenises with the raw `tokenizers` library, writes the ChatML text out by hand, and computes
Qwen2 (RMSNorm, rotary embeddings, causal attention with q/k/v biases, SwiGLU) from the equations.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer

MARKER = "<extra_0>"


def chatml(messages: Sequence[tuple[str, str]]) -> str:
    return "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in messages)


class Reference:
    def __init__(self, model_dir: Path) -> None:
        self.config: dict[str, Any] = json.loads((model_dir / "config.json").read_text())
        self.weights = {k: v.double() for k, v in load_file(str(model_dir / "model.safetensors")).items()}
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))

    def ids(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def token_id(self, token: str) -> int:
        found = self.tokenizer.token_to_id(token)
        assert found is not None
        return int(found)

    def _rms(self, x: torch.Tensor, name: str) -> torch.Tensor:
        eps = self.config["rms_norm_eps"]
        return self.weights[name] * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

    def hidden(self, ids: Sequence[int], prefix: str = "model.") -> torch.Tensor:
        """Final hidden states (sequence x hidden) of one unpadded sequence."""
        w, cfg = self.weights, self.config
        heads, hidden = cfg["num_attention_heads"], cfg["hidden_size"]
        dim = hidden // heads
        n = len(ids)
        x = w[prefix + "embed_tokens.weight"][torch.tensor(ids)]
        theta = cfg.get("rope_parameters", {}).get("rope_theta", cfg.get("rope_theta", 10000.0))
        inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
        angles = torch.outer(torch.arange(n, dtype=torch.float64), inv_freq)
        cos, sin = torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()

        def rope(t: torch.Tensor) -> torch.Tensor:
            half = t.shape[-1] // 2
            rotated = torch.cat([-t[..., half:], t[..., :half]], -1)
            return t * cos + rotated * sin

        causal = torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)
        for layer in range(cfg["num_hidden_layers"]):
            p = f"{prefix}layers.{layer}."
            h = self._rms(x, p + "input_layernorm.weight")
            q, k, v = (
                (h @ w[p + f"self_attn.{name}_proj.weight"].T + w[p + f"self_attn.{name}_proj.bias"])
                .view(n, heads, dim)
                .transpose(0, 1)
                for name in ("q", "k", "v")
            )
            scores = rope(q) @ rope(k).transpose(-1, -2) / dim**0.5 + causal
            attended = (scores.softmax(-1) @ v).transpose(0, 1).reshape(n, hidden)
            x = x + attended @ w[p + "self_attn.o_proj.weight"].T
            h = self._rms(x, p + "post_attention_layernorm.weight")
            gate = torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T)
            x = x + (gate * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        return self._rms(x, prefix + "norm.weight")

    # -- the three formats -------------------------------------------------------------------------
    def qwen_step_scores(self, system: str, prompt: str, steps: Sequence[str]) -> list[float]:
        text = chatml(
            [("system", system), ("user", prompt), ("assistant", "".join(s + MARKER for s in steps))]
        )
        ids = self.ids(text)
        at = [i for i, t in enumerate(ids) if t == self.token_id(MARKER)]
        h = self.hidden(ids)[at]
        w = self.weights
        logits = (
            torch.relu(h @ w["score.0.weight"].T + w["score.0.bias"]) @ w["score.2.weight"].T
            + w["score.2.bias"]
        )
        return logits.softmax(-1)[:, 1].tolist()

    def shepherd_step_scores(self, prompt: str, steps: Sequence[str], tag: str) -> list[float]:
        text = f"{prompt} " + "\n".join(f"{s} {tag}" for s in steps)
        ids = self.ids(text)
        at = [i for i, t in enumerate(ids) if t == self.token_id(tag)]
        logits = self.hidden(ids)[at] @ self.weights["lm_head.weight"].T
        pair = logits[:, [self.token_id("+"), self.token_id("-")]]
        return pair.softmax(-1)[:, 0].tolist()

    def classifier_score(self, prompt: str, response: str) -> float:
        ids = self.ids(chatml([("user", prompt), ("assistant", response)]))
        logit = self.hidden(ids)[-1] @ self.weights["score.weight"].T
        return float(torch.sigmoid(logit)[0])
