"""Which text of a chat transcript the model wrote: the assistant turns, never a tool's (issue 38).

A verifier must read what the policy wrote: a transcript whose only `\\boxed{42}` is in a tool's output
would earn 1.0 if the whole transcript were scored, which pays the policy for making a tool print the
answer. Items that carry `messages`, TRL's and OpenEnv's transcripts all score `assistant_text`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["assistant_text", "check_messages"]


def assistant_text(messages: Sequence[Any]) -> str:
    """The assistant messages' text, joined by newlines (content given as parts: their text parts)."""
    parts = []
    for message in messages:
        if isinstance(message, Mapping) and message.get("role") == "assistant":
            parts.append(_content(message.get("content")))
    return "\n".join(p for p in parts if p)


def _content(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return str(content)


def check_messages(messages: Any) -> str | None:
    """What is wrong with an item's `messages` (a list of `{"role", "content"}` with one assistant turn at
    least), or None. A list with no assistant turn is refused: the role is misspelt or the model's turns
    were left out, and scoring no text would be a silent 0."""
    if not isinstance(messages, list):
        return f"messages must be a list of {{role, content}} objects, got {type(messages).__name__}"
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return f'messages[{index}] must be an object with a text "role"'
        content = message.get("content")
        if not (content is None or isinstance(content, str | list)):
            return f"messages[{index}].content must be text, a list of parts or null"
    if not any(m["role"] == "assistant" for m in messages):
        roles = sorted({m["role"] for m in messages})
        return f"messages has no assistant turn to score (roles: {', '.join(roles) or 'none'})"
    return None
