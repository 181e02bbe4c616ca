"""Tiny process reward models built on the fly, saved with `save_pretrained` as real checkpoints are.

Why: tests must not download weights, and the loading path (config, safetensors, tokenizer files, chat
template) is part of what is tested. Shapes follow tests/tiny_models.py so that vLLM's CPU backend
serves the same directory: 2 layers, hidden 64, 2 heads of size 32, vocabulary 512, and the tokenizer of
tests/tiny_models.py (byte-level BPE with `<|endoftext|>`, `<|im_start|>`, `<|im_end|>`, `<extra_0>` and a
ChatML template).

- `build_qwen_prm`: `architectures=["Qwen2ForProcessRewardModel"]`, num_labels 2, head `score.0` (H x H),
  ReLU, `score.2` (2 x H), the layout of Qwen2.5-Math-PRM.
- `build_shepherd`: a `Qwen2ForCausalLM` scored Math-Shepherd style (p("+") among "+"/"-" at a step tag).
- `build_classifier`: a `Qwen2ForSequenceClassification` with one label (a plain outcome reward model).

Random weights: the scores mean nothing, they only have to be reproduced exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tiny_models import build_tokenizer, qwen2_config

MAX_POSITIONS = 2048
# Qwen2's pre-tokenizer split (digits one by one, as in the released tokenizer.json files). transformers
# imposes it on any `model_type: qwen2` tokenizer; writing it into tokenizer.json keeps the raw
# `tokenizers` library (the independent reference of the tests) and transformers/vLLM in agreement.
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def _tokenizer(out_dir: Path) -> Any:
    """tests/tiny_models.py's tokenizer, with Qwen2's pre-tokenizer written into its tokenizer.json."""
    from tokenizers import Regex, Tokenizer, pre_tokenizers

    fast = build_tokenizer(out_dir)
    path = out_dir / "tokenizer.json"
    raw = Tokenizer.from_file(str(path))
    raw.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    raw.save(str(path))
    return fast


def _config(tokenizer: Any, **extra: Any) -> Any:
    return qwen2_config(tokenizer, MAX_POSITIONS, dtype="float32", **extra)


def _spread(module: Any, seed: int) -> None:
    """Re-draw weights and biases with a larger scale, so that step scores spread over (0, 1).

    With the default init (std 0.02) every step scores 0.5 +- 0.01 and all steps look alike; a test of
    thresholds, of which step is first below one, or of batch invariance would pass for the wrong reasons.
    Norm weights stay at 1.
    """
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in module.named_parameters():
            if "norm" not in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.15)


def build_qwen_prm(out_dir: Path) -> Path:
    import torch

    from assay.prm.backends.qwen_prm_model import Qwen2ForProcessRewardModel

    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(out_dir)
    torch.manual_seed(1)
    model = Qwen2ForProcessRewardModel(_config(tokenizer, num_labels=2))
    _spread(model, seed=2)
    model.save_pretrained(str(out_dir))
    return out_dir


def build_shepherd(out_dir: Path) -> Path:
    import torch
    from transformers import Qwen2ForCausalLM

    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(out_dir)
    torch.manual_seed(3)
    model = Qwen2ForCausalLM(_config(tokenizer, tie_word_embeddings=False))
    _spread(model, seed=4)
    model.save_pretrained(str(out_dir))
    return out_dir


def build_classifier(out_dir: Path) -> Path:
    import torch
    from transformers import Qwen2ForSequenceClassification

    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(out_dir)
    torch.manual_seed(5)
    model = Qwen2ForSequenceClassification(_config(tokenizer, num_labels=1))
    _spread(model, seed=6)
    model.save_pretrained(str(out_dir))
    return out_dir
