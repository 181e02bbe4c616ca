"""Loaders: JSONL, CSV, Parquet, Arrow and `datasets` folders, column mapping, and bad rows."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assay.bench.dataset import coerce_label, load, parse_mapping, task_of_rows
from assay.registry import Registry
from assay.settings import Settings

# The same two rows in a user's own column names.
COLUMNS = {
    "qid": ["a", "b"],
    "model_output": ["\\boxed{2}", "\\boxed{3}"],
    "answer": ["2", "2"],
    "is_correct": [True, False],
    "category": ["int", "int"],
    "difficulty": ["easy", "hard"],  # not a contract field: dropped
}
MAP = parse_mapping(["response=model_output,reference=answer", "label=is_correct", "id=qid"])


def _check_mapped(rows: Sequence[Any]) -> None:
    assert [r.id for r in rows] == ["a", "b"]
    assert rows[0].item == {"id": "a", "task": "math", "response": "\\boxed{2}", "reference": "2"}
    assert [r.label for r in rows] == [True, False]
    assert [r.category for r in rows] == ["int", "int"]
    assert all(r.problem is None for r in rows)


def test_jsonl_keeps_contract_fields_label_and_category(
    write_jsonl: Callable[[Sequence[Any], str], Path],
) -> None:
    line = {
        "id": "q",
        "task": "math",
        "response": "4",
        "reference": "4",
        "label": True,
        "category": "c",
        "note": "why",
        "extra": 1,
    }
    [row] = load(write_jsonl([line], "a.jsonl"), "math")
    assert row.item == {"id": "q", "task": "math", "response": "4", "reference": "4"}
    assert (row.label, row.category, row.problem) == (True, "c", None)


def test_csv_with_mapping_and_json_text_fields(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["qid", "model_output", "answer", "is_correct", "category", "difficulty"])
        writer.writerow(["a", "\\boxed{2}", "2", "yes", "int", "easy"])
        writer.writerow(["b", "\\boxed{3}", "2", "0", "int", "hard"])
    _check_mapped(load(path, "math", MAP))


def test_csv_decodes_tests_given_as_json_text(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    tests = json.dumps([{"stdin": "1\n", "stdout": "1\n"}])
    path.write_text(f'id,response,tests,label\nc1,print(1),"{tests.replace(chr(34), chr(34) * 2)}",true\n')
    [row] = load(path, "code")
    assert row.item["tests"] == [{"stdin": "1\n", "stdout": "1\n"}]


def test_parquet_with_mapping(tmp_path: Path) -> None:
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table(COLUMNS), path)
    _check_mapped(load(path, "math", MAP))


def test_datasets_save_to_disk_folder(tmp_path: Path) -> None:
    # What `Dataset.save_to_disk` writes: Arrow IPC *stream* shards listed in state.json.
    folder = tmp_path / "saved"
    folder.mkdir()
    table = pa.table(COLUMNS)
    for number, part in enumerate((table.slice(0, 1), table.slice(1, 1))):
        shard = folder / f"data-0000{number}-of-00002.arrow"
        with pa.OSFile(str(shard), "wb") as sink, pa.ipc.new_stream(sink, part.schema) as writer:
            writer.write_table(part)
    state = {"_data_files": [{"filename": f"data-0000{n}-of-00002.arrow"} for n in (0, 1)]}
    (folder / "state.json").write_text(json.dumps(state))
    (folder / "dataset_info.json").write_text("{}")
    _check_mapped(load(folder, "math", MAP))


def test_arrow_file_format(tmp_path: Path) -> None:
    path = tmp_path / "a.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, pa.table(COLUMNS).schema) as writer:
        writer.write_table(pa.table(COLUMNS))
    _check_mapped(load(path, "math", MAP))


DATA = Path(__file__).parent / "data"


def test_a_folder_written_by_the_datasets_library(tmp_path: Path) -> None:
    # data/datasets_dict: `DatasetDict({"train": Dataset.from_dict(...)}).save_to_disk(...)` with
    # datasets 5.2.0 (not a dependency): one split, so the folder is read as that split.
    mapping = parse_mapping(["response=model_output,reference=answer,label=is_correct,id=qid"])
    for path in (DATA / "datasets_dict", DATA / "datasets_dict" / "train"):
        rows = load(path, "math", mapping)
        assert [(r.id, r.label, r.problem) for r in rows] == [("a", True, None), ("b", False, None)]
        assert rows[0].item["response"] == "\\boxed{2}"


def test_a_datasets_dict_with_several_splits_asks_for_one(tmp_path: Path) -> None:
    (tmp_path / "dataset_dict.json").write_text('{"splits": ["train", "test"]}')
    with pytest.raises(ValueError, match="point at one"):
        load(tmp_path, "math")


def test_bad_rows_are_kept_with_their_problem(write_jsonl: Callable[[Sequence[Any], str], Path]) -> None:
    lines = [
        "{not json",
        '["a list"]',
        {"id": "opts", "response": "1", "reference": "1", "options": 5, "label": True},
        {"id": "lab", "response": "1", "reference": "1", "label": "perhaps"},
        {"id": "other", "task": "sql", "response": "1", "label": True},
        {"id": "fine", "response": "1", "reference": "1", "label": 1},
    ]
    rows = load(write_jsonl(lines, "bad.jsonl"), "math")
    assert len(rows) == 6
    problems = {r.id: r.problem for r in rows}
    assert "not valid JSON" in (problems["row-0"] or "")
    assert "not a JSON object" in (problems["row-1"] or "")
    assert "options" in (problems["opts"] or "")
    assert "perhaps" in (problems["lab"] or "")
    assert 'task "sql"' in (problems["other"] or "")
    assert problems["fine"] is None


def test_duplicate_ids_stay_distinct(write_jsonl: Callable[[Sequence[Any], str], Path]) -> None:
    rows = load(write_jsonl([{"id": "d", "response": "1"}, {"id": "d", "response": "2"}], "d.jsonl"), "math")
    assert [r.id for r in rows] == ["d", "d#1"]


@pytest.mark.parametrize("spec", ["response", "answer=col", "response="])
def test_bad_mappings_say_what_is_wrong(spec: str) -> None:
    with pytest.raises(ValueError, match=r"mapping|cannot map"):
        parse_mapping([spec])


@pytest.mark.parametrize(
    ("value", "expected"), [(True, True), (0, False), ("Yes", True), ("incorrect", False), ("", None)]
)
def test_labels_read_from_common_spellings(value: Any, expected: bool | None) -> None:
    assert coerce_label(value) is expected


def test_unknown_suffix_is_a_value_error(tmp_path: Path) -> None:
    path = tmp_path / "a.xlsx"
    path.write_text("")
    with pytest.raises(ValueError, match="cannot read"):
        load(path, "math")


def test_an_integer_answer_column_in_parquet_is_text_for_the_engine_and_baselines(tmp_path: Path) -> None:
    # An integer Parquet column made every row invalid: 100% FN for Assay and math-verify (issue 31).
    path = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"response": ["\\boxed{2}"], "reference": pa.array([2], pa.int64())}), path)
    (row,) = load(path, "math")
    assert row.problem is None
    assert row.item["reference"] == "2"


@pytest.mark.parametrize(
    ("records", "found"),
    [
        ([{"task": "sql"}, {"task": "sql"}, {"__problem__": "bad JSON"}], "sql"),
        ([{"kind": "math"}], "math"),  # through --map task=kind
        ([{"task": "sql"}, {"task": "math"}], "several tasks (math, sql)"),
        ([{"response": "1"}], "no row names its task"),
        ([{"task": "code"}, {"task": ""}], "1 of 2 rows name no task (the rest: code): pass --task code"),
    ],
)
def test_the_task_is_read_from_the_rows_or_the_error_says_what_to_pass(
    records: list[dict[str, Any]], found: str
) -> None:
    mapping = {"task": "kind"} if "kind" in records[0] else {}
    if found in {"sql", "math"}:
        assert task_of_rows(records, mapping) == found
    else:
        with pytest.raises(ValueError, match=re.escape(found)):
            task_of_rows(records, mapping)


def test_a_row_keeps_its_tasks_own_fields_and_may_map_them(
    write_jsonl: Callable[[Sequence[Any], str], Path],
) -> None:
    # `keyed` declares `answer_key` (Scorer.Fields): a bench of it keeps the column, mapped or not.
    registry = Registry.from_settings(Settings(plugins=["assay_test_plugins:KeyedScorer"]))
    mapping = parse_mapping(["answer_key=keys,label=ok"], registry.item_fields())
    lines = [
        {"id": "k", "response": "Paris", "keys": ["Paris"], "ok": True},
        {"id": "n", "answer_key": ["x"]},
    ]
    mapped, named = load(write_jsonl(lines, "keyed.jsonl"), "keyed", mapping, registry)
    assert mapped.item == {"id": "k", "task": "keyed", "response": "Paris", "answer_key": ["Paris"]}
    assert named.item["answer_key"] == ["x"] and (mapped.problem, named.problem) == (None, None)
    with pytest.raises(ValueError, match="cannot map"):
        parse_mapping(["answer_key=keys"])  # no task here declares it
