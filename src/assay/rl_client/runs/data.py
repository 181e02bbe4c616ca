"""Data for a run: JSON Lines, Parquet or a saved Hugging Face `datasets` directory, or the rows a task's
own generator draws (`data.source`: reasoning-gym's datasets by name and seed), rows -> `Problem`s.

A field mapping names the column that holds each Assay item field (`prompt: question`, `reference:
answer`, ...; a row's task's own fields, `Scorer.Fields`, too); columns not mapped to an item field are
ignored. A row may carry its own task (a mix of
tasks in one data set) and a `mix` list of `[task, weight]` pairs (rewards combined per item). pyarrow
(Parquet) and `datasets` are imported only when such a file is read.

Prompts go through the tokenizer's chat template when it has one (`chat_template: auto`), as a single user
turn after an optional system prompt, so the policy sees what it saw in instruction tuning; the raw prompt
still goes to Assay (a judge grades the question, not the template).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError, UnknownTaskError
from assay.jsonl import read_lines
from assay.rl_client.generate import Problem

if TYPE_CHECKING:
    from assay.registry import Registry

# Item fields `Problem` holds itself; a row fills the other fields of its task's items.
_OWN_FIELDS = frozenset({"id", "task", "prompt", "response", "reference"})


class DataError(ConfigError):
    """A data file or row that cannot become a training item; the message says which and why."""


def detect_format(path: Path) -> str:
    if path.is_dir():
        return "hf_dataset"
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise DataError(
        f"{path}: cannot tell the format from the name; set data.format to jsonl, parquet or hf_dataset"
    )


def read_rows(path: Path, fmt: str = "auto", split: str = "train") -> list[dict[str, Any]]:
    """Every row of a data file as a dict."""
    if not path.exists():
        raise DataError(f"{path}: no such file or directory")
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt == "jsonl":
        return list(_jsonl(path))
    if fmt == "parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise DataError("reading Parquet needs pyarrow: pip install 'assay[train]'") from exc
        return list(pq.read_table(path).to_pylist())
    if fmt == "hf_dataset":
        return _hf_dataset(path, split)
    raise DataError(f"unknown data format {fmt!r}: use jsonl, parquet or hf_dataset")


def source_rows(source: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows a task's own generator draws (`data.source: {TASK: SPEC}`; the task's `Scorer.source`,
    found by name through the registry, so no task is named here)."""
    from assay.registry import Registry
    from assay.settings import Settings

    ((task, spec),) = source.items()
    try:
        return Registry.from_settings(Settings()).lookup(task).source.rows(spec)
    except (ConfigError, UnknownTaskError) as exc:
        raise DataError(f"data.source.{task}: {exc}") from exc


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in read_lines(handle, objects=True):
            if line.problem:
                raise DataError(f"{path}: {line.problem}")
            yield line.value


def _hf_dataset(path: Path, split: str) -> list[dict[str, Any]]:
    try:
        from datasets import DatasetDict, load_from_disk
    except ImportError as exc:
        raise DataError("reading a saved datasets directory needs `pip install datasets`") from exc
    data = load_from_disk(str(path))
    if isinstance(data, DatasetDict):
        if split not in data:
            raise DataError(f"{path}: no split {split!r}; it has {sorted(data)} (set data.split)")
        data = data[split]
    return [dict(row) for row in data]


def to_problems(
    rows: Sequence[Mapping[str, Any]],
    fields: Mapping[str, str],
    default_task: str,
    render: Callable[[str], str] = lambda prompt: prompt,
    source: str = "data",
) -> list[Problem]:
    """Map rows to problems: `fields[item_field]` is the row's column for it (default: the same name).
    A row fills the item fields of its task (`Item`'s and the task's own, asked of the registry; a task
    it does not know gets `Item`'s: the server says what is wrong with it)."""
    registry = _registry()
    extras: dict[str, tuple[str, ...]] = {}

    def extra_fields(task: str) -> tuple[str, ...]:
        if task not in extras:
            model = registry.item_model({"task": task})
            extras[task] = tuple(sorted(set(model.model_fields) - _OWN_FIELDS))
        return extras[task]

    problems = []
    for index, row in enumerate(rows):
        where = f"{source} row {index + 1}"
        problems.append(_problem(row, fields, default_task, render, where, index, extra_fields))
    return problems


def _registry() -> Registry:
    """The tasks this process knows (built-in, entry points, ASSAY_PLUGINS), as the server is configured."""
    from assay.registry import Registry
    from assay.settings import Settings

    try:
        return Registry.from_settings(Settings())
    except ConfigError as exc:
        raise DataError(f"cannot read the tasks' item fields: {exc}") from exc


def _problem(
    row: Mapping[str, Any],
    fields: Mapping[str, str],
    default_task: str,
    render: Callable[[str], str],
    where: str,
    index: int,
    extra_fields: Callable[[str], tuple[str, ...]],
) -> Problem:
    def column(name: str) -> Any:
        return row.get(fields.get(name, name))

    prompt = column("prompt")
    if not isinstance(prompt, str) or not prompt:
        wanted = fields.get("prompt", "prompt")
        raise DataError(
            f"{where}: no prompt in column {wanted!r} (columns: {sorted(row)}); "
            "map it with data.fields.prompt"
        )
    reference = column("reference")
    task = column("task") or default_task
    extra = {name: column(name) for name in extra_fields(str(task)) if column(name) is not None}
    mix = column("mix") or []
    try:
        pairs = [(str(t), float(w)) for t, w in mix]
    except (TypeError, ValueError) as exc:
        raise DataError(f"{where}: mix must be a list of [task, weight] pairs, got {mix!r}") from exc
    rendered = render(prompt)
    if rendered != prompt:
        extra["prompt"] = prompt  # Assay sees the question, the policy sees the template
    ident = column("id")
    return Problem(
        id=str(ident) if ident is not None else str(index),
        prompt=rendered,
        reference="" if reference is None else str(reference),
        task=str(task),
        fields=extra,
        mix=pairs,
    )


def solve_rate_band(
    rows: Sequence[dict[str, Any]], low: float | None, high: float | None, source: str = "data"
) -> list[dict[str, Any]]:
    """The rows whose `solve_rate` (written by `assay validate --policy ... --keep`) lies in [low, high],
    so a run starts on the prompts the policy can learn from. With no band, every row."""
    if low is None and high is None:
        return list(rows)
    kept = []
    for index, row in enumerate(rows):
        rate = row.get("solve_rate")
        if not isinstance(rate, int | float) or isinstance(rate, bool):
            raise DataError(
                f"{source} row {index + 1}: data.min_solve_rate/max_solve_rate need a numeric solve_rate "
                f"column (got {rate!r}); write one with `assay validate --policy ... --keep`"
            )
        if (low is None or rate >= low) and (high is None or rate <= high):
            kept.append(row)
    if not kept:
        raise DataError(f"{source}: no row has a solve_rate in [{low}, {high}]")
    return kept


def split_eval(
    problems: list[Problem], fraction: float, size: int, seed: int
) -> tuple[list[Problem], list[Problem]]:
    """Hold out `fraction` of the problems (at most `size`) for greedy evaluation, shuffled by `seed`."""
    if fraction <= 0:
        return problems, []
    order = list(problems)
    random.Random(seed).shuffle(order)
    held = min(size, max(1, int(len(order) * fraction)))
    if held >= len(order):
        raise DataError(f"eval_fraction {fraction} leaves no training data ({len(order)} rows)")
    return order[held:], order[:held]


def chat_renderer(tokenizer: Any, mode: str, system_prompt: str | None) -> Callable[[str], str]:
    """`auto`: the tokenizer's chat template when it has one; `always` insists; `never` sends raw text."""
    has = getattr(tokenizer, "chat_template", None) is not None
    if mode == "never" or (mode == "auto" and not has):
        return lambda prompt: prompt
    if not has:
        raise DataError("data.chat_template is 'always' but the tokenizer has no chat template")

    def render(prompt: str) -> str:
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages.append({"role": "user", "content": prompt})
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return str(text)

    return render
