"""Raw items in, labelled results out: the two ends of the scoring pipeline, shared by every engine.

`parse_item` turns what a client sent into an `Item` or an `ItemError` that says exactly what is wrong
("did you mean" for typos); `labelled` puts the item's id, task and elapsed time on its `Result`, escaped
so it always serialises; `count` records the item in the metrics. The in-process `Engine` and the Ray
engine use the same three, so an item reads and answers alike on both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from assay.errors import ItemError
from assay.metrics import Metrics
from assay.registry import Registry, Scorer
from assay.suggest import did_you_mean
from assay.types import Item, Result, TaskOptions, id_text


@dataclass(frozen=True)
class Unreadable:
    """An item the HTTP layer would not expand (nested too deep, too many values: `assay.api.body`);
    it stands in the batch at its place and is answered `invalid` with `reason`."""

    reason: str


def parse_item(raw: Any, registry: Registry | None = None) -> Item:
    """Validate one raw item, with its task's own fields where `registry` knows its task
    (`Scorer.Fields`); ItemError says exactly what is wrong (with "did you mean" for typos)."""
    if isinstance(raw, Item):
        return raw
    if isinstance(raw, Unreadable):
        raise ItemError(raw.reason)
    if not isinstance(raw, dict):
        raise ItemError(f"an item must be a JSON object, got {type(raw).__name__}")
    model = Item if registry is None else registry.item_model(raw)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                name = str(err["loc"][0])
                problems.append(f'unknown field "{name}"{did_you_mean(name, model.model_fields)}')
            elif err["type"] == "missing":
                problems.append(f'missing field "{field}"')
            else:
                message = str(err["msg"]).removeprefix("Value error, ")
                problems.append(f"{field}: {message}" if field else message)
        raise ItemError("; ".join(problems)) from exc


def prepare(raw: Any, registry: Registry) -> tuple[Item, type[Scorer], TaskOptions]:
    """The item, its task's scorer class and its validated options; ItemError when any is wrong."""
    item = parse_item(raw, registry)
    scorer_cls = registry.lookup(item.task)
    return item, scorer_cls, scorer_cls.parse_options(item.options)


def raw_id(raw: Any) -> str | None:
    """The id of an item that failed validation, when one can be read, so the caller can match it."""
    value = id_text(raw.get("id")) if isinstance(raw, dict) else None
    return value if isinstance(value, str) else None


def raw_task(raw: Any) -> str | None:
    """The task an item names, when it names one as text."""
    task = raw.get("task") if isinstance(raw, dict) else None
    return task if isinstance(task, str) else None


def labelled(raw: Any, result: Result, elapsed_ms: float) -> Result:
    """`result` with the item's id, task and elapsed time filled in, lone surrogates escaped."""
    update = {"id": raw_id(raw), "task": raw_task(raw), "elapsed_ms": round(elapsed_ms, 3)}
    return result.model_copy(update=update).json_safe()


def count(metrics: Metrics, known_tasks: Any, result: Result) -> None:
    """Record one answered item by task ("unknown" for a task not in `known_tasks`), status and flags."""
    label = result.task if result.task in known_tasks else "unknown"
    metrics.count_item(label, result.status.value, result.details)
    metrics.item_seconds.labels(task=label).observe(result.elapsed_ms / 1000.0)
    if isinstance(module := result.details.get("missing_module"), str):  # assay.sandbox.runtime
        metrics.missing_module(module)
