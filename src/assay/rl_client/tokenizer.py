"""The tokenizer interface the loop's backends and multi-turn rollouts use, over a transformers
tokenizer (the loop's own: the vLLM backend wraps its engine's tokenizer with it, the product its
models' tokenizers)."""

from __future__ import annotations

from typing import Any


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
