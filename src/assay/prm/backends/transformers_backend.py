"""The in-process backend: a transformers model, loaded once, fed by the micro-batcher.

Scores must not depend on which other items share a batch (a trainer's batch size must not change its
rewards). So: right padding, a 2-D attention mask, explicit position ids 0..n-1 per row (with right
padding the real tokens of every row keep the positions they have alone, and no real token ever attends
to a pad because pads come after it under the causal mask), and the heads applied only at the positions
read. The head runs in float32 even when the backbone is bf16, as vLLM does for pooling models, so the two
serving stacks agree as closely as the backbone allows.

torch and transformers are imported inside functions: importing this module is free, so the registry can
load the `prm` scorer on a server without the extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.prm.backends.base import PrmBadInput, PrmUnavailable, StepRequest, StepScores
from assay.prm.backends.in_process import InProcessBackend
from assay.prm.formats import PrmFormat
from assay.settings import PrmSettings

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Encoded:
    """One item as token ids, with the positions whose outputs are its scores."""

    input_ids: list[int]
    read_at: list[int]  # marker positions (per-step formats) or the last token (classifier)


@dataclass
class _Loaded:
    torch: Any
    tokenizer: Any
    model: Any
    device: Any
    max_length: int
    marker_id: int | None
    label_ids: tuple[int, int] | None  # math-shepherd: (positive, negative) vocabulary ids
    pad_id: int


def _resolve_device_dtype(torch: Any, device: str, dtype: str) -> tuple[Any, Any]:
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    if dtype == "auto":
        return dev, torch.bfloat16 if dev.type == "cuda" else torch.float32
    return dev, getattr(torch, dtype)


def _single_token(tokenizer: Any, text: str, what: str) -> int:
    """The id of `text` when it is exactly one token of the vocabulary, else an error saying so."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) == 1:
        return int(ids[0])
    # A vocabulary entry that plain text does not encode to (SentencePiece's "▁+", for example).
    token_id = tokenizer.convert_tokens_to_ids(text)
    if isinstance(token_id, int) and token_id != tokenizer.unk_token_id:
        return token_id
    raise PrmUnavailable(f"the {what} {text!r} is not a single token of this model's vocabulary ({ids})")


class TransformersBackend(InProcessBackend[Encoded, _Loaded]):
    """Loads the model on first use (in the batcher's thread) and scores micro-batches."""

    what = "PRM"

    @classmethod
    def for_model(
        cls, settings: PrmSettings, fmt: PrmFormat, model: Any, *, marker_id: int | None, pad_id: int = 0
    ) -> TransformersBackend:
        """A backend around a model already built in memory (benchmarks): `forward` works, `encode` does not.

        The model stays on its device and dtype; its head is moved to float32, as `load` does.
        """
        import torch

        backend = cls(settings, fmt)
        model.eval()
        backend._head(model).float()
        device = next(model.parameters()).device
        backend._loaded = _Loaded(
            torch=torch,
            tokenizer=None,
            model=model,
            device=device,
            max_length=settings.max_tokens,
            marker_id=marker_id,
            label_ids=None,
            pad_id=pad_id,
        )
        return backend

    def _load_model(self) -> _Loaded:
        import torch
        import transformers

        path = self.settings.model
        if not path:
            raise PrmUnavailable("no PRM configured: set settings.prm.model (ASSAY_PRM__MODEL)")
        device, dtype = _resolve_device_dtype(torch, self.settings.device, self.settings.dtype)
        tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        config = transformers.AutoConfig.from_pretrained(path)
        model = self._model_class(transformers, config).from_pretrained(path, dtype=dtype)
        model.to(device).eval()
        head = self._head(model)
        head.float()  # fp32 head, as vLLM runs pooling heads
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        marker_id = label_ids = None
        if self.format.marker is not None:
            marker_id = _single_token(tokenizer, self.format.marker, "step tag")
        if self.format.name == "math-shepherd":
            label_ids = (
                _single_token(tokenizer, self.format.positive_token, "positive token"),
                _single_token(tokenizer, self.format.negative_token, "negative token"),
            )
        limit = getattr(config, "max_position_embeddings", None) or self.settings.max_tokens
        return _Loaded(
            torch=torch,
            tokenizer=tokenizer,
            model=model,
            device=device,
            max_length=min(limit, self.settings.max_tokens),
            marker_id=marker_id,
            label_ids=label_ids,
            pad_id=int(pad_id if pad_id is not None else 0),
        )

    def _model_class(self, transformers: Any, config: Any) -> Any:
        architectures = list(getattr(config, "architectures", None) or [])
        if self.format.name == "qwen":
            from assay.prm.backends.qwen_prm_model import ARCHITECTURE, Qwen2ForProcessRewardModel

            if ARCHITECTURE not in architectures:
                raise PrmUnavailable(
                    f"format qwen needs a {ARCHITECTURE} checkpoint; {self.settings.model!r} is "
                    f"{architectures} (set settings.prm.format)"
                )
            return Qwen2ForProcessRewardModel
        if self.format.name == "math-shepherd":
            return transformers.AutoModelForCausalLM
        return transformers.AutoModelForSequenceClassification

    def _head(self, model: Any) -> Any:
        head = model.get_output_embeddings() if self.format.name == "math-shepherd" else model.score
        if head is None:
            raise PrmUnavailable(f"{self.settings.model!r} has no head for format {self.format.name}")
        return head

    # -- encoding --------------------------------------------------------------------------------
    def encode(self, request: StepRequest) -> Encoded:
        """Token ids of one item and the positions to read; PrmBadInput if the model cannot take it."""
        loaded = self._require()
        tokenizer = loaded.tokenizer
        if self.format.uses_chat and tokenizer.chat_template:
            chat = self.format.messages(request.prompt, request.steps)
            text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=False)
            ids = tokenizer.encode(text, add_special_tokens=False)  # the template places the specials
        else:
            ids = tokenizer.encode(self.format.text(request.prompt, request.steps), add_special_tokens=True)
        if len(ids) > loaded.max_length:
            raise PrmBadInput(f"the input is {len(ids)} tokens; this model takes at most {loaded.max_length}")
        if loaded.marker_id is None:
            return Encoded(list(ids), [len(ids) - 1])
        read_at = [i for i, token in enumerate(ids) if token == loaded.marker_id]
        if len(read_at) != len(request.steps):
            raise PrmBadInput(
                f"{len(read_at)} step tags after tokenisation for {len(request.steps)} steps "
                "(a step merges with the tag or contains it)"
            )
        return Encoded(list(ids), read_at)

    # -- the forward pass ------------------------------------------------------------------------
    def forward(self, batch: list[Encoded]) -> list[StepScores]:
        """Scores for a batch; the same item gives the same scores in any batch (see module doc)."""
        loaded = self._require()
        torch = loaded.torch
        with torch.inference_mode():
            hidden = self._hidden(loaded, batch)
            rows = torch.tensor([b for b, e in enumerate(batch) for _ in e.read_at], dtype=torch.long)
            cols = torch.tensor([p for e in batch for p in e.read_at], dtype=torch.long)
            picked = hidden[rows.to(loaded.device), cols.to(loaded.device)].float()
            probs = self._probabilities(loaded, picked).double().cpu().tolist()
        results: list[StepScores] = []
        start = 0
        for encoded in batch:
            count = len(encoded.read_at)
            scores = tuple(probs[start : start + count])
            start += count
            results.append(StepScores(scores, {"tokens": len(encoded.input_ids)}))
        return results

    def _hidden(self, loaded: _Loaded, batch: list[Encoded]) -> torch.Tensor:
        torch = loaded.torch
        longest = max(len(e.input_ids) for e in batch)
        input_ids = torch.full((len(batch), longest), loaded.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), longest), dtype=torch.long)
        for row, encoded in enumerate(batch):
            input_ids[row, : len(encoded.input_ids)] = torch.tensor(encoded.input_ids, dtype=torch.long)
            mask[row, : len(encoded.input_ids)] = 1
        positions = torch.arange(longest, dtype=torch.long).unsqueeze(0).expand(len(batch), -1)
        out = loaded.model.base_model(
            input_ids=input_ids.to(loaded.device),
            attention_mask=mask.to(loaded.device),
            position_ids=positions.to(loaded.device),
            use_cache=False,
        )
        return out.last_hidden_state

    def _probabilities(self, loaded: _Loaded, picked: torch.Tensor) -> torch.Tensor:
        """Hidden states at the read positions -> one probability each."""
        torch = loaded.torch
        logits = self._head(loaded.model)(picked)
        if self.format.name == "math-shepherd":
            assert loaded.label_ids is not None
            pair = logits[:, list(loaded.label_ids)]
            return torch.softmax(pair, dim=-1)[:, 0]
        if logits.shape[-1] == 1:  # a one-logit reward model (classifier)
            return torch.sigmoid(logits[:, 0])
        return torch.softmax(logits, dim=-1)[:, -1]  # the positive ("correct") class is the last one
