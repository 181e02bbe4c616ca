"""Run configs: YAML/TOML loading, `--set` overrides typed by the schema, errors that say what to change;
data files and field mappings; the task mix."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from assay.rl_client.runs.command import main
from assay.rl_client.runs.config import ConfigError, apply_override, load_config, validate
from assay.rl_client.runs.data import DataError, chat_renderer, read_rows, split_eval, to_problems
from assay.rl_client.runs.mix import TaskMix
from assay.types import Result

MINIMAL = {"model": {"path": "m"}, "data": {"train": "t.jsonl"}}


def test_yaml_and_toml_give_the_same_config(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "model: {path: m}\ndata: {train: t.jsonl}\ntrain:\n  steps: 7\n  generate: {group_size: 4}\n"
    )
    (tmp_path / "a.toml").write_text(
        '[model]\npath = "m"\n[data]\ntrain = "t.jsonl"\n'
        "[train]\nsteps = 7\n[train.generate]\ngroup_size = 4\n"
    )
    from_yaml, base = load_config(tmp_path / "a.yaml")
    from_toml, _ = load_config(tmp_path / "a.toml")
    assert from_yaml == from_toml
    assert from_yaml.train.steps == 7 and from_yaml.train.generate.group_size == 4
    assert base == tmp_path.resolve()


def test_set_overrides_are_typed_by_the_schema() -> None:
    data: dict[str, Any] = json.loads(json.dumps(MINIMAL))
    sets = ["train.generate.group_size=16", "train.lr=1e-4", "train.control.dynamic_sampling=false",
            "data.system_prompt=You are: terse", "reward.task_weights={math: 2}"]  # fmt: skip
    for assignment in sets:
        apply_override(data, assignment)
    cfg = validate(data)
    assert cfg.train.generate.group_size == 16
    assert cfg.train.lr == 1e-4
    assert cfg.train.control.dynamic_sampling is False
    assert cfg.data.system_prompt == "You are: terse"  # text with a colon stays text
    assert cfg.reward.task_weights == {"math": 2.0}


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("train.generate.grup_size=4", "did you mean 'group_size'"),
        ("train.generate.group_size=1", "group_size must be at least 2"),
        ("train.lr=0.05", "1e-3 collapsed"),
        ("train.loss.aggregation=mean", "'token', 'sequence' or 'dr_grpo'"),
        ("backend.kind=tgi", "backend.kind"),
        ("algoritm=star", "did you mean 'algorithm'"),
        ("train.steps=many", "train.steps"),
    ],
)
def test_errors_name_the_field_and_what_to_change(override: str, expected: str) -> None:
    data: dict[str, Any] = json.loads(json.dumps(MINIMAL))
    apply_override(data, override)
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        validate(data)


def test_a_missing_section_and_a_malformed_set_are_explained(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model: required"):
        validate({"data": {"train": "t"}})
    with pytest.raises(ConfigError, match=r"section\.field=value"):
        apply_override({}, "train.steps")
    with pytest.raises(ConfigError, match="--init"):
        load_config(tmp_path / "absent.yaml")


def test_the_command_reports_config_errors_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run.yaml").write_text("model: {path: m}\ndata: {train: t.jsonl}\n")
    assert main(["--config", str(tmp_path / "run.yaml"), "--set", "train.stepz=3"]) == 2
    assert "did you mean 'steps'" in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "run.yaml"), "--check", "--set", "train.steps=3"]) == 0
    assert json.loads(capsys.readouterr().out)["train"]["steps"] == 3


ROWS = [
    {"q": "1+1=", "a": "2", "kind": "math", "extra": "ignored"},
    {"q": "print one", "a": None, "kind": "code", "tests": [{"stdin": "", "stdout": "1"}]},
    {"q": "2+2=", "a": "4", "mix": [["math", 0.7], ["judge", 0.3]]},
]


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_jsonl_and_parquet_rows_map_to_the_same_problems(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl = _write_jsonl(tmp_path / "d.jsonl", ROWS)
    parquet = tmp_path / "d.parquet"
    columns = ("q", "a", "kind", "tests")  # Parquet columns have one type each: no mixed [task, weight]
    pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in columns} for r in ROWS]), parquet)
    fields = {"prompt": "q", "reference": "a", "task": "kind"}
    from_jsonl = to_problems(read_rows(jsonl), fields, "math")
    assert [p.task for p in from_jsonl] == ["math", "code", "math"]
    assert from_jsonl[0].reference == "2" and from_jsonl[1].reference == ""
    assert from_jsonl[1].fields == {"tests": [{"stdin": "", "stdout": "1"}]}
    assert from_jsonl[2].mix == [("math", 0.7), ("judge", 0.3)]
    from_parquet = to_problems(read_rows(parquet), fields, "math")
    assert [(p.prompt, p.reference, p.task, p.fields) for p in from_parquet] == [
        (p.prompt, p.reference, p.task, p.fields) for p in from_jsonl
    ]


def test_a_row_fills_its_tasks_own_item_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    # `keyed` declares `answer_key` (Scorer.Fields): a row of it sends the column, mapped or not; a math
    # row of the same data does not (math's items have no such field).
    monkeypatch.setenv("ASSAY_PLUGINS", '["assay_test_plugins:KeyedScorer"]')
    rows = [{"prompt": "Capital?", "keys": ["Paris"]}, {"prompt": "2+2", "task": "math", "keys": ["4"]}]
    keyed, math = to_problems(rows, {"answer_key": "keys"}, "keyed")
    assert (keyed.task, keyed.fields) == ("keyed", {"answer_key": ["Paris"]})
    assert (math.task, math.fields) == ("math", {})


def test_bad_data_gets_a_message_with_the_row_and_the_fix(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "d.jsonl", [{"question": "x"}])
    with pytest.raises(DataError, match=r"row 1: no prompt in column 'prompt'.*data.fields.prompt"):
        to_problems(read_rows(path), {}, "math")
    (tmp_path / "bad.jsonl").write_text('{"prompt": "a"}\nnot json\n')
    with pytest.raises(DataError, match=r"bad\.jsonl: line 2: not valid JSON"):
        read_rows(tmp_path / "bad.jsonl")
    with pytest.raises(DataError, match=r"set data\.format"):
        read_rows(_write_jsonl(tmp_path / "d.txt", []))
    with pytest.raises(DataError, match="mix must be a list"):
        to_problems([{"prompt": "p", "mix": "math"}], {}, "math")


def test_a_saved_datasets_directory_is_read_or_explained(tmp_path: Path) -> None:
    try:
        import datasets
    except ImportError:
        with pytest.raises(DataError, match="pip install datasets"):
            read_rows(tmp_path)
        return
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list([{"prompt": "1+1=", "reference": "2"}])}
    ).save_to_disk(str(tmp_path / "ds"))
    assert read_rows(tmp_path / "ds") == [{"prompt": "1+1=", "reference": "2"}]
    with pytest.raises(DataError, match="no split 'test'"):
        read_rows(tmp_path / "ds", split="test")


def test_eval_split_is_held_out_and_reproducible() -> None:
    problems = to_problems([{"prompt": f"{i}+0=", "reference": str(i)} for i in range(50)], {}, "math")
    train, held = split_eval(problems, 0.2, 100, seed=3)
    again, held_again = split_eval(problems, 0.2, 100, seed=3)
    assert len(held) == 10 and len(train) == 40
    assert {p.id for p in held}.isdisjoint(p.id for p in train)
    assert held == held_again and train == again


def test_chat_template_renders_prompts_and_keeps_the_raw_one_for_assay(tmp_path: Path) -> None:
    from tiny_models import build_tokenizer

    tokenizer = build_tokenizer(tmp_path / "tok")
    render = chat_renderer(tokenizer, "auto", "Be brief.")
    [problem] = to_problems([{"prompt": "What is 2 + 2?", "reference": "4"}], {}, "math", render)
    assert problem.prompt.startswith("<|im_start|>system\nBe brief.<|im_end|>")
    assert problem.prompt.endswith("<|im_start|>assistant\n")
    assert problem.fields["prompt"] == "What is 2 + 2?"
    assert chat_renderer(tokenizer, "never", None)("x") == "x"
    tokenizer.chat_template = None
    with pytest.raises(DataError, match="no chat template"):
        chat_renderer(tokenizer, "always", None)


class Recorder:
    """Scores math by exact match and anything else by a fixed grade; errors for task 'broken'."""

    def __init__(self) -> None:
        self.requests = 0
        self.seen: list[dict[str, Any]] = []

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        self.requests += 1
        self.seen.extend(items)
        out = []
        for item in items:
            if item["task"] == "broken":
                out.append(Result.error("judge unreachable", task="broken"))
            elif item["task"] == "math":
                out.append(Result.verdict(item["response"] == item["reference"], task="math"))
            else:
                out.append(Result.graded(0.5, task=item["task"]))
        return out

    async def aclose(self) -> None:
        return None


def test_task_mix_weights_tasks_and_combines_rewards_per_item() -> None:
    inner = Recorder()
    mix = TaskMix(inner, {"judge": 2.0})
    items = [
        {"id": "a", "task": "math", "response": "4", "reference": "4"},
        {"id": "b", "task": "judge", "response": "x", "reference": ""},
        {
            "id": "c",
            "task": "math",
            "response": "4",
            "reference": "4",
            "mix": [["math", 0.7], ["judge", 0.3]],
        },
        {
            "id": "d",
            "task": "math",
            "response": "4",
            "reference": "4",
            "mix": [["math", 0.5], ["broken", 0.5]],
        },
    ]
    results = asyncio.run(mix.ascore(items))
    assert [r.reward for r in results[:3]] == [1.0, 1.0, pytest.approx(0.7 + 0.15)]
    assert results[2].correct is None  # a graded part makes the combination graded
    assert results[3].status.value == "error" and results[3].reward is None  # masked, never 0
    assert "broken not scored" in results[3].reason
    assert all("mix" not in item for item in inner.seen)  # Assay never sees the private key
    assert [i["task"] for i in inner.seen] == ["math", "judge", "math", "judge", "math", "broken"]


def test_partial_rollouts_on_the_in_process_vllm_backend_are_refused() -> None:
    data: dict[str, Any] = {**MINIMAL, "backend": {"kind": "vllm"}}
    apply_override(data, "train.control.partial_rollouts=true")
    with pytest.raises(ConfigError, match="hf or vllm_server"):
        validate(data)


def test_a_solve_rate_band_keeps_the_rows_inside_it() -> None:
    from assay.rl_client.runs.data import solve_rate_band

    rows = [{"prompt": str(r), "solve_rate": r} for r in (0.0, 0.25, 0.5, 1.0)]
    assert [r["solve_rate"] for r in solve_rate_band(rows, 0.1, 0.9)] == [0.25, 0.5]
    assert solve_rate_band(rows, None, None) == rows
    with pytest.raises(DataError, match=r"row 2: .*numeric solve_rate"):
        solve_rate_band([{"solve_rate": 0.5}, {"prompt": "no rate"}], 0.1, None)
    with pytest.raises(DataError, match="no row has a solve_rate"):
        solve_rate_band(rows, 0.6, 0.9)


def test_a_band_upside_down_is_a_config_error() -> None:
    data: dict[str, Any] = json.loads(json.dumps(MINIMAL))
    apply_override(data, "data.min_solve_rate=0.8")
    apply_override(data, "data.max_solve_rate=0.2")
    with pytest.raises(ConfigError, match="min_solve_rate"):
        validate(data)


def test_run_flags_with_a_config_set_their_config_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # They were ignored with --config, silently (issue 31); now each sets the field --help names.
    (tmp_path / "run.yaml").write_text("model: {path: m}\ndata: {train: t.jsonl}\n")
    flags = ["--steps", "7", "--lr", "1e-4", "--seed", "3", "--group-size", "4", "--time-budget", "9"]
    flags += ["--no-dynamic-sampling", "--aggregation", "dr_grpo", "--out", str(tmp_path / "o")]
    assert main(["--config", str(tmp_path / "run.yaml"), "--check", *flags]) == 0
    cfg = json.loads(capsys.readouterr().out)
    train = cfg["train"]
    assert (train["steps"], train["lr"], train["seed"], cfg["time_budget_s"]) == (7, 1e-4, 3, 9.0)
    assert train["generate"]["group_size"] == 4 and train["control"]["dynamic_sampling"] is False
    assert train["loss"]["aggregation"] == "dr_grpo" and cfg["output"]["dir"] == str(tmp_path / "o")


def test_a_set_of_the_same_field_wins_over_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run.yaml").write_text("model: {path: m}\ndata: {train: t.jsonl}\ntrain: {steps: 50}\n")
    assert (
        main(["--config", str(tmp_path / "run.yaml"), "--check", "--steps", "7", "--set", "train.steps=9"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["train"]["steps"] == 9
    assert main(["--config", str(tmp_path / "run.yaml"), "--check"]) == 0
    assert json.loads(capsys.readouterr().out)["train"]["steps"] == 50  # no flag: the config's own value


def test_a_bad_flag_value_with_a_config_is_a_config_error_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run.yaml").write_text("model: {path: m}\ndata: {train: t.jsonl}\n")
    assert main(["--config", str(tmp_path / "run.yaml"), "--check", "--group-size", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "train.generate: group_size must be at least 2" in err and "Traceback" not in err


def test_paths_on_the_command_line_start_from_the_current_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--set output.dir=X` landed beside the config file, silently (issue 43); the file's own paths still
    # start from the file's directory.
    config = tmp_path / "run1" / "run.yaml"
    config.parent.mkdir()
    config.write_text("model: {path: m}\ndata: {train: t.jsonl}\noutput: {dir: o}\n")
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["--config", "../run1/run.yaml", "--check", "--set", "output.dir=out_star"]) == 0
    assert json.loads(capsys.readouterr().out)["output"]["dir"] == str(here / "out_star")
    assert (
        main(["--config", "../run1/run.yaml", "--check", "--out", "runs/a", "--set", "data.eval=e.jsonl"])
        == 0
    )
    cfg = json.loads(capsys.readouterr().out)
    assert cfg["output"]["dir"] == str(here / "runs" / "a") and cfg["data"]["eval"] == str(here / "e.jsonl")
    assert main(["--config", "../run1/run.yaml", "--check", "--set", "output.dir=/abs/o"]) == 0
    assert json.loads(capsys.readouterr().out)["output"]["dir"] == "/abs/o"
    cfg_, base = load_config(Path("../run1/run.yaml"))
    assert (cfg_.output.dir, cfg_.model.path, base) == ("o", "m", config.parent.resolve())


def _finished_run(out: Path) -> Path:
    """A directory as a finished run leaves it (summary written last)."""
    (out / "checkpoints" / "step-000004").mkdir(parents=True)
    (out / "log.jsonl").write_text('{"step": 1}\n')
    (out / "summary.json").write_text('{"steps": 4}\n')
    return out


def test_a_config_run_refuses_a_finished_out_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run.yaml").write_text("model: {path: m}\ndata: {train: t.jsonl}\n")
    out = _finished_run(tmp_path / "out")
    assert main(["--config", str(tmp_path / "run.yaml"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(out) in err and "--fresh" in err
    assert (out / "summary.json").exists()
