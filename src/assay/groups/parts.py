"""How a batch of groups arrives (`{"id", "items"}` or a plain list) and how it is cut into rounds."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from assay.errors import ItemError


def responses_of(items: Sequence[Any]) -> list[str | None]:
    """The `response` of each raw item, None where an item is not an object with a text response."""
    out: list[str | None] = []
    for item in items:
        value = item.get("response") if isinstance(item, dict) else getattr(item, "response", None)
        out.append(value if isinstance(value, str) else None)
    return out


def group_parts(index: int, group: Any) -> tuple[str | None, list[Any]]:
    """(id, items) of a group given as `{"id", "items"}` or as a plain list of items."""
    if isinstance(group, dict) and isinstance(group.get("items"), list):
        gid = group.get("id")
        return (str(gid) if gid is not None else None), group["items"]
    if isinstance(group, list | tuple):
        return None, list(group)
    raise ItemError(f'group {index} must be {{"id": ..., "items": [...]}} or a list of items')


def group_rounds(
    groups: Sequence[Any], limit: int, count_of: Callable[[int, Any], int] | None = None
) -> Iterator[list[Any]]:
    """Consecutive runs of whole groups holding at most `limit` items (a larger group goes alone): the
    one way a batch of groups (or of trees: `count_of` counts a tree's leaves) is cut, by the sync engine
    and by the HTTP client."""
    chunk: list[Any] = []
    size = 0
    for index, group in enumerate(groups):
        count = count_of(index, group) if count_of else len(group_parts(index, group)[1])
        if chunk and size + count > limit:
            yield chunk
            chunk, size = [], 0
        chunk.append(group)
        size += count
    if chunk:
        yield chunk
