"""How each kind of reward model wants (prompt, steps) laid out, and where its scores are read.

- `qwen` (Qwen2.5-Math-PRM): a chat with the fixed system prompt below, the prompt as the user turn and the
  steps as the assistant turn, each step followed by `<extra_0>`. The model is a token classifier; the
  step's score is the probability of class 1 ("correct") at its `<extra_0>`. This is the model card's
  recipe; the chat template itself comes from the model's tokenizer (or, under vLLM, the server's).
- `math-shepherd`: plain text `"{prompt} {step 1} ки\\n{step 2} ки"` scored by a causal LM; the step's
  score is p("+") / (p("+") + p("-")) from the logits at its tag (the Math-Shepherd paper's recipe).
- `classifier`: a plain sequence-classification reward model: one score for the whole response, the
  sigmoid of its single logit (or the softmax of the last class when it has two). It has no steps; the
  result has one "step".
- `vstar`: a V-STaR verifier (`backends/vstar.py`): the prompt and the response as they are, one score
  for the whole response from a DPO-trained causal LM and its reference.

Pure data: no tokenizer or model is touched here, so the scorer can validate items without the extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

FormatName = Literal["qwen", "math-shepherd", "classifier", "vstar"]

QWEN_SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
QWEN_MARKER = "<extra_0>"
SHEPHERD_MARKER = "ки"  # Cyrillic, as in the released Math-Shepherd checkpoints

Message = dict[str, str]


@dataclass(frozen=True)
class PrmFormat:
    """One model family's input layout. `marker` is the step tag (None: one score per response)."""

    name: FormatName
    marker: str | None
    system: str | None = None
    positive_token: str = "+"
    negative_token: str = "-"

    @property
    def per_step(self) -> bool:
        return self.marker is not None

    @property
    def uses_chat(self) -> bool:
        """Whether the input is a chat rendered with the model's template (else plain text)."""
        return self.name in ("qwen", "classifier")

    def messages(self, prompt: str, steps: Sequence[str]) -> list[Message]:
        """The chat to render (qwen, classifier)."""
        chat: list[Message] = []
        if self.system:
            chat.append({"role": "system", "content": self.system})
        chat.append({"role": "user", "content": prompt})
        if self.marker is None:
            chat.append({"role": "assistant", "content": "\n\n".join(steps)})
        else:
            chat.append({"role": "assistant", "content": "".join(step + self.marker for step in steps)})
        return chat

    def text(self, prompt: str, steps: Sequence[str]) -> str:
        """The plain-text input (math-shepherd), and the fallback for a tokenizer without a template."""
        if self.name == "math-shepherd":
            return f"{prompt} " + "\n".join(f"{step} {self.marker}" for step in steps)
        body = "\n\n".join(steps) if self.marker is None else "".join(s + self.marker for s in steps)
        return f"{prompt}\n\n{body}"


def make_format(
    name: FormatName,
    step_tag: str | None = None,
    system: str | None = None,
    positive_token: str = "+",
    negative_token: str = "-",
) -> PrmFormat:
    """The format `name`, with its defaults (marker, system prompt) unless overridden."""
    if name == "qwen":
        return PrmFormat(
            name, step_tag or QWEN_MARKER, system=QWEN_SYSTEM if system is None else system or None
        )
    if name == "math-shepherd":
        return PrmFormat(
            name, step_tag or SHEPHERD_MARKER, positive_token=positive_token, negative_token=negative_token
        )
    if name in ("classifier", "vstar"):
        return PrmFormat(name, None, system=system or None)
    raise ValueError(f"unknown prm format {name!r}")
