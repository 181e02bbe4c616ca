"""A TRL `reward_funcs` callable backed by Assay (tested with TRL 1.16's `GRPOTrainer`).

    from assay.integrations.trl import AssayReward
    trainer = GRPOTrainer(model=..., reward_funcs=[AssayReward("http://127.0.0.1:8000")], ...)

TRL calls `reward_func(prompts=..., completions=..., **dataset_columns)`; the gold answer comes from the
dataset column named by `reference_key` (default `answer`). Completions are strings, or message lists in
conversational mode, where only the assistant messages are scored (a tool's messages never are). A
result that is not ok becomes None: TRL turns it into NaN and masks that sample (nanmean/nansum)
instead of training on a made-up score. The URL is `url`, else `ASSAY_URL`; with
`accelerate launch` every process reads the same environment.

With `environment_factory=AssayEnv` TRL also passes the batch's `environments`: the rollouts are over
once they are scored, so their Assay sessions end here (`trl_env.end_sessions`; list `AssayReward` after
any reward function that reads the environments).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.client import AssayClient
from assay.integrations.clients import assay_url, shared_client
from assay.integrations.transcripts import assistant_text
from assay.integrations.trl_env import end_sessions

__all__ = [
    "AssayReward",
    "completion_text",
    "prompt_text",
]


def completion_text(completion: Any) -> str:
    """What the model wrote: a string, or in conversational format its assistant messages joined (a
    tool-calling completion also holds the tools' messages; their text is never scored, issue 38)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and all(isinstance(m, dict) for m in completion):
        return assistant_text(completion)
    raise TypeError(f"cannot read a completion of type {type(completion).__name__}")


def prompt_text(prompt: Any) -> str:
    """The prompt's text: a string, or the last message's content in conversational format."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence) and prompt and isinstance(prompt[-1], dict):
        return str(prompt[-1].get("content", ""))
    raise TypeError(f"cannot read a prompt of type {type(prompt).__name__}")


class AssayReward:
    """`(prompts, completions, **kwargs) -> list[float | None]`."""

    def __init__(
        self,
        url: str | None = None,
        *,
        task: str = "math",
        reference_key: str = "answer",
        client: AssayClient | None = None,
    ) -> None:
        self.client = client if client is not None else shared_client(assay_url(url))
        self.task = task
        self.reference_key = reference_key
        self.__name__ = f"assay_{task}"  # TRL names the reward's log columns after it

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float | None]:
        try:
            return self._score(prompts, completions, kwargs)
        finally:
            end_sessions(kwargs.get("environments") or ())

    def _score(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]
    ) -> list[float | None]:
        references = kwargs.get(self.reference_key)
        if references is None:
            raise KeyError(
                f"no dataset column {self.reference_key!r} in the reward kwargs (set reference_key)"
            )
        items = [
            {
                "task": self.task,
                "prompt": prompt_text(prompt) if prompt is not None else None,
                "response": completion_text(completion),
                "reference": None if reference is None else str(reference),
            }
            for prompt, completion, reference in zip(prompts, completions, references, strict=True)
        ]
        return [r.reward for r in self.client.score(items)]
