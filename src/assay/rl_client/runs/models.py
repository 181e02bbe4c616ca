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

# The example's alphabet: digits and the two operators first (ids 3..14, as the demo's CharTokenizer),
# then letters and punctuation so hint templates and rationales can be written.
CHAR_ALPHABET = "0123456789+=" + " abcdefghijklmnopqrstuvwxyz.,:;?!()-*/|"
CHAR_SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")


class TextTokenizer:
    """A transformers tokenizer seen through the small interface the backends use."""

    def __init__(self, tokenizer: Any, add_special_tokens: bool = True) -> None:
        self.tokenizer = tokenizer
        self.add_special_tokens = add_special_tokens
        self.eos_token_id = int(tokenizer.eos_token_id)
        pad = tokenizer.pad_token_id
        self.pad_token_id = int(pad if pad is not None else tokenizer.eos_token_id)

    @property
    def chat_template(self) -> Any:
        return getattr(self.tokenizer, "chat_template", None)

    def apply_chat_template(self, *args: Any, **kwargs: Any) -> Any:
        return self.tokenizer.apply_chat_template(*args, **kwargs)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=self.add_special_tokens)["input_ids"])

    def encode_plain(self, text: str) -> list[int]:
        """A continuation (a tool's observation): the text's tokens, no special tokens."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def encode_answer(self, text: str) -> list[int]:
        """A target for supervised steps: the text's tokens and the end token."""
        return [*self.tokenizer(text, add_special_tokens=False)["input_ids"], self.eos_token_id]

    def decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))


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


def char_tokenizer(out_dir: Path | None = None) -> Any:
    """A one-token-per-character tokenizer built with `tokenizers`; `<s>` starts every encoded text."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(CHAR_SPECIALS)}
    vocab.update({c: i + len(CHAR_SPECIALS) for i, c in enumerate(CHAR_ALPHABET)})
    vocab["<pad>"], vocab["<s>"], vocab["</s>"] = 0, 1, 2
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
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
