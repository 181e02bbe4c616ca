"""Labelled sets: rows from JSONL, CSV, Parquet or a `datasets`-saved folder, as items plus labels.

A labelled row is a contract item (`assay.types.Item`, with its task's own fields: `Scorer.Fields`) plus
`label` (true: the response is correct), an optional `category`, and an optional `note` (kept for people,
ignored for scoring). Other columns are dropped. `--map response=model_output,label=is_correct` renames
columns (item field = column).

A row that cannot become an item is kept with its `problem`: it is still scored (every verifier
reports `invalid` for it) and listed, never silently dropped. Files are read with pyarrow (CSV,
Parquet, Arrow); `datasets`' `save_to_disk` folders are Arrow IPC streams that pyarrow reads alone.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import ItemError
from assay.items import parse_item
from assay.jsonl import read_lines
from assay.registry import Registry
from assay.types import Item

EXTRA_FIELDS = ("label", "category", "note")
# Fields whose value is a list or an object: in CSV (and some Parquet files) they arrive as JSON text.
_JSON_FIELDS = ("options", "tests", "steps")
_TRUE = {"true", "t", "yes", "y", "1", "correct", "1.0"}
_FALSE = {"false", "f", "no", "n", "0", "incorrect", "0.0"}


@dataclass(frozen=True)
class Row:
    """One row of a bench set: the item as the engine will see it, and what the person said about it."""

    index: int  # 0-based position in the file
    id: str  # the item's id, or "row-<index>" when it has none
    item: dict[str, Any]  # item fields only (`Item`'s and the task's own)
    label: bool | None
    category: str
    problem: str | None = None  # why the row cannot become an item (scored as invalid everywhere)


def parse_mapping(specs: Sequence[str], fields: Collection[str] = Item.FIELDS) -> dict[str, str]:
    """`["response=model_output,label=is_correct"]` -> {"response": "model_output", ...}; a field must be
    one of `fields` (the item fields a task may carry: `Registry.item_fields`) or a bench column."""
    mapping: dict[str, str] = {}
    for spec in specs:
        for pair in filter(None, (p.strip() for p in spec.split(","))):
            field, sep, column = pair.partition("=")
            field, column = field.strip(), column.strip()
            if not sep or not field or not column:
                raise ValueError(f'bad mapping "{pair}": write field=column, e.g. response=model_output')
            if field not in fields and field not in EXTRA_FIELDS:
                known = sorted({*fields, *EXTRA_FIELDS})
                raise ValueError(f'cannot map to "{field}": known fields are {", ".join(known)}')
            mapping[field] = column
    return mapping


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Raw rows of a file or a `datasets` folder, by suffix. Unreadable JSON lines come back as
    `{"__problem__": reason}` so they are reported, not dropped."""
    if path.is_dir():
        yield from _read_datasets_folder(path)
        return
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".json", ".ndjson"}:
        yield from _read_jsonl(path)
    elif suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            yield from csv.DictReader(handle)
    elif suffix in {".parquet", ".pq"}:
        import pyarrow.parquet as pq

        yield from pq.read_table(path).to_pylist()
    elif suffix in {".arrow", ".feather", ".ipc"}:
        yield from _read_arrow(path).to_pylist()
    else:
        raise ValueError(f"cannot read {path.name}: use .jsonl, .csv, .parquet, .arrow or a datasets folder")


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in read_lines(handle, objects=True):
            yield {"__problem__": line.problem} if line.problem else line.value


def _read_arrow(path: Path) -> Any:
    """An Arrow file: `datasets` writes the IPC stream format; feather/IPC files use the file format."""
    import pyarrow as pa

    try:
        with pa.memory_map(str(path)) as source:
            return pa.ipc.open_stream(source).read_all()
    except pa.ArrowInvalid:
        with pa.memory_map(str(path)) as source:
            return pa.ipc.open_file(source).read_all()


def _read_datasets_folder(path: Path) -> Iterator[dict[str, Any]]:
    """A `Dataset.save_to_disk` folder: `state.json` lists its Arrow shards in order. A `DatasetDict`
    folder with a single split is read as that split; with several, the person must pick one."""
    splits_file = path / "dataset_dict.json"
    if splits_file.is_file():
        splits = json.loads(splits_file.read_text())["splits"]
        if len(splits) != 1:
            raise ValueError(f"{path} holds splits {splits}: point at one, e.g. {path / splits[0]}")
        path = path / splits[0]
    state = path / "state.json"
    if state.is_file():
        shards = [path / entry["filename"] for entry in json.loads(state.read_text())["_data_files"]]
    else:
        shards = sorted(path.glob("*.arrow"))
    if not shards:
        raise ValueError(f"{path} holds no .arrow shards")
    for shard in shards:
        yield from _read_arrow(shard).to_pylist()


def coerce_label(value: Any) -> bool | None:
    """A label from bools, 0/1 and the usual words; ValueError on anything else. None stays None."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"label {value!r} is not true/false")


def to_row(
    index: int,
    record: Mapping[str, Any],
    mapping: Mapping[str, str],
    task: str,
    registry: Registry | None = None,
) -> Row:
    """Rename, keep the item fields of `task` (`Item`'s, and its own where `registry` knows it), decode
    JSON-in-text fields, and validate; never raises."""
    if "__problem__" in record:
        return Row(index, f"row-{index}", {"task": task}, None, "", str(record["__problem__"]))
    renamed = {field: record[column] for field, column in mapping.items() if column in record}
    for key, value in record.items():
        if key not in renamed and key not in mapping.values():
            renamed[key] = value
    fields = (Item.model_for(task) if registry is None else registry.item_model({"task": task})).model_fields
    item = {k: v for k, v in renamed.items() if k in fields and v is not None and v != ""}
    item.setdefault("task", task)
    problems: list[str] = []
    for field in _JSON_FIELDS:
        if isinstance(item.get(field), str):
            try:
                item[field] = json.loads(item[field])
            except json.JSONDecodeError:
                problems.append(f"{field} is not JSON")
    if isinstance(item.get("id"), int | float):
        item["id"] = str(int(item["id"]))
    label: bool | None = None
    try:
        label = coerce_label(renamed.get("label"))
    except ValueError as exc:
        problems.append(str(exc))
    if item["task"] != task:
        problems.append(f'task "{item["task"]}" in a bench of task "{task}"')
    if not problems:
        try:
            parsed = parse_item(item, registry)
        except ItemError as exc:
            problems.append(str(exc))
        else:
            # Baselines read the row's item as written: give them the text the engine scores (an
            # integer answer column arrives as int; issue 31).
            item.update({f: getattr(parsed, f) for f in item if f in type(parsed).model_fields})
    row_id = item.get("id") if isinstance(item.get("id"), str) else f"row-{index}"
    category = renamed.get("category")
    return Row(
        index=index,
        id=str(row_id),
        item=item,
        label=label,
        category=str(category) if category not in (None, "") else "(none)",
        problem="; ".join(problems) or None,
    )


def task_of_rows(records: Sequence[Mapping[str, Any]], mapping: Mapping[str, str]) -> str:
    """The one task every row names (`assay bench FILE` without `--task`); a ValueError that says what to
    pass when rows name none, several, or only some of them do."""
    column = mapping.get("task", "task")
    named = [r.get(column) for r in records if "__problem__" not in r]
    tasks = sorted({str(t) for t in named if t not in (None, "")})
    missing = sum(t in (None, "") for t in named)
    if len(tasks) == 1 and not missing:
        return tasks[0]
    if not tasks:
        raise ValueError(f"no row names its task (column {column!r}): pass --task (math, sql, code, ...)")
    if len(tasks) > 1:
        raise ValueError(
            f"the rows name several tasks ({', '.join(tasks)}): a bench measures one; pass --task"
        )
    raise ValueError(
        f"{missing} of {len(named)} rows name no task (the rest: {tasks[0]}): pass --task {tasks[0]}"
    )


def load(
    path: Path, task: str, mapping: Mapping[str, str] | None = None, registry: Registry | None = None
) -> list[Row]:
    """Every row of `path` as a `Row`, in file order; duplicate ids get a `#<index>` suffix. With
    `registry`, a row keeps its task's own item fields too (`Scorer.Fields`)."""
    return _rows(list(read_records(path)), task, mapping or {}, registry)


def load_bench(
    path: Path, task: str | None, mapping: Mapping[str, str] | None = None, registry: Registry | None = None
) -> tuple[str, list[Row]]:
    """The bench's task (`task`, or the one every row names: `task_of_rows`) and its rows, as `load`."""
    records = list(read_records(path))
    task = task or task_of_rows(records, mapping or {})
    return task, _rows(records, task, mapping or {}, registry)


def _rows(
    records: Sequence[Mapping[str, Any]], task: str, mapping: Mapping[str, str], registry: Registry | None
) -> list[Row]:
    rows = [to_row(i, rec, mapping, task, registry) for i, rec in enumerate(records)]
    seen: set[str] = set()
    unique = []
    for row in rows:
        if row.id in seen:
            row = Row(row.index, f"{row.id}#{row.index}", row.item, row.label, row.category, row.problem)
        seen.add(row.id)
        unique.append(row)
    return unique
