"""The policy for a configured run: a transformers model and its tokenizer, from a directory or a GGUF file.

`TextTokenizer` adapts a transformers tokenizer to what the backends and the SFT helpers call (`encode`,
`decode`, `encode_answer`): prompts that came through the chat template already hold their special tokens,
so they are encoded without adding more. `build_char_model` makes the `--init` example's model: a
character-level tokenizer trained with `tokenizers` and a small GPT-2 with random weights, both saved
with `save_pretrained`, so a run loads it by the same path a real model takes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from assay.rl_client.runs.config import ModelSection
from assay.rl_client.tokenizer import TextTokenizer as TextTokenizer  # its old home: still importable here

# The example's alphabet: digits and the two operators first (ids 3..14, as the demo's CharTokenizer),
# then letters and punctuation so hint templates and rationales can be written.
CHAR_ALPHABET = "0123456789+=" + " abcdefghijklmnopqrstuvwxyz.,:;?!()-*/|"
CHAR_SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")


def load_tokenizer(section: ModelSection, base: Path) -> Any:
    from transformers import AutoTokenizer

    path = resolve(section.tokenizer or section.path, base)
    options: dict[str, Any] = {}
    if section.gguf_file and not section.tokenizer:
        options["gguf_file"] = section.gguf_file
    return AutoTokenizer.from_pretrained(str(path), **options)


def load_model(section: ModelSection, base: Path) -> Any:
    """A causal LM from `section.path` (GGUF through transformers' own converter when `gguf_file` is set)."""
    from transformers import AutoModelForCausalLM

    options: dict[str, Any] = {"dtype": getattr(torch, section.dtype)}
    if section.gguf_file:
        options["gguf_file"] = section.gguf_file
    return AutoModelForCausalLM.from_pretrained(str(resolve(section.path, base)), **options)


def resolve(path: str, base: Path) -> Path:
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else base / candidate


def char_tokenizer(out_dir: Path | None = None, alphabet: str = CHAR_ALPHABET) -> Any:
    """A one-token-per-character tokenizer built with `tokenizers`; `<s>` starts every encoded text.
    Every character is its own piece, a newline too (`--init --tools` writes `<output>\n...`)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(CHAR_SPECIALS)}
    vocab.update({c: i + len(CHAR_SPECIALS) for i, c in enumerate(alphabet)})
    vocab["<pad>"], vocab["<s>"], vocab["</s>"] = 0, 1, 2
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    if out_dir is not None:
        tokenizer.save_pretrained(str(out_dir))
    return tokenizer


def build_char_model(
    tokenizer: Any, seed: int, width: int = 128, layers: int = 2, positions: int = 48
) -> Any:
    """A GPT-2 from a config with random weights (about 0.4M parameters at the defaults)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=positions,
        n_embd=width,
        n_layer=layers,
        n_head=4,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return GPT2LMHeadModel(config)
