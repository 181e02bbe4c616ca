"""A task owns its validation probes (issue 36): `assay validate` asks the task through the registry, so
a plugin task is probed and read exactly as a built-in one, with no edit to the validator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from assay.engine.scoring import Engine
from assay.registry import Finding, Recheck, Scorer, Validation, ValidationProbe
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions
from assay.validate import validate


class EchoValidation(Validation):
    def most(self, repeats: int) -> int:
        return 3

    def probes(self, index: int, item: Item, repeats: int) -> list[ValidationProbe]:
        return [
            ValidationProbe.answer(index, item, item.reference or "", "accepted", "the reference"),
            ValidationProbe.answer(index, item, "pass", "rejected", "the word pass"),
            ValidationProbe.answer(index, item, "", "rejected", "an empty response"),
        ]

    def read_reference(self, result: Result) -> list[Finding]:
        short = len(result.extracted or "") < 3
        return [Finding("short_reference", "a reference this short is guessed", "warning")] if short else []

    def read_repeats(self, runs: Sequence[Result]) -> list[Finding]:
        raise AssertionError("one accepted probe: never two runs to compare")


class Echo(Scorer[TaskOptions]):
    """Rewards a response equal to the reference, and (its bug) also the word "pass"."""

    name: ClassVar[str] = "echo"
    runs_in = "async"
    validation: ClassVar[Validation] = EchoValidation()

    async def ascore(self, item: Item, options: TaskOptions) -> Result:
        response = item.response or ""
        return Result.verdict(response in (item.reference, "pass"), "echo", extracted=response)


def test_a_plugin_task_is_probed_and_read_through_the_registry() -> None:
    with Engine(Settings(workers=1, plugins=[f"{__name__}:Echo"])) as engine:
        good, short = validate(
            [{"task": "echo", "reference": "hello"}, {"task": "echo", "reference": "hi"}], engine
        )
    assert [(p.check, p.severity) for p in good.problems] == [("trivial_rewarded", "error")]
    assert "the word pass earns reward 1" in good.problems[0].reason
    assert not good.valid
    assert {(p.check, p.severity) for p in short.problems} == {
        ("trivial_rewarded", "error"),
        ("short_reference", "warning"),
    }


class Shouting(Recheck):
    """Flags upper-case references among the tasks that passed; counts its own closing."""

    closed = 0

    def findings(self, item: Item) -> list[Finding]:
        return [Finding("shouted", "an upper-case reference")] if (item.reference or "").isupper() else []

    def close(self) -> None:
        Shouting.closed += 1


class RowValidation(Validation):
    def row(self, row: dict[str, object]) -> dict[str, object]:  # written before `model` was passed
        """Rows of this task may carry their reference as `gold`."""
        gold = row.get("gold")
        return {k: v for k, v in row.items() if k != "gold"} | ({"reference": gold} if gold else {})

    def check_prompt(self, item: Item) -> list[Finding]:
        return [Finding("no_prompt", "a task without a prompt", "warning")] if not item.prompt else []

    def probes(self, index: int, item: Item, repeats: int) -> list[ValidationProbe]:
        return [ValidationProbe.answer(index, item, item.reference or "", "accepted", "the reference")]

    def recheck(self, settings: Settings) -> Recheck | None:
        return Shouting()


class Exact(Scorer[TaskOptions]):
    name: ClassVar[str] = "exact"
    runs_in = "async"
    validation: ClassVar[Validation] = RowValidation()

    async def ascore(self, item: Item, options: TaskOptions) -> Result:
        return Result.verdict(item.response == item.reference, "exact", extracted=item.response)


def test_a_plugin_task_reads_its_rows_checks_its_prompts_and_rechecks_what_passed() -> None:
    Shouting.closed = 0
    with Engine(Settings(workers=1, plugins=[f"{__name__}:Exact"])) as engine:
        quiet, loud, missing = validate(
            [
                {"task": "exact", "prompt": "say hi", "gold": "hi"},
                {"task": "exact", "gold": "HI"},
                {"task": "exact", "prompt": "say nothing"},
            ],
            engine,
        )
    assert quiet.valid and quiet.problems == []
    assert [(p.check, p.severity) for p in loud.problems] == [("no_prompt", "warning"), ("shouted", "error")]
    assert not missing.valid and "shouted" not in {p.check for p in missing.problems}
    assert Shouting.closed == 1  # opened once for the run, closed once
