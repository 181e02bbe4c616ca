"""The gate for self-generated tasks: solver consensus (math) and repeatable execution (code)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from assay.engine.scoring import Engine
from assay.errors import ConfigError
from assay.registry import Finding, Gate, Registry, Scorer, Validation
from assay.registry.gate import GateContext, Outcome
from assay.settings import Settings
from assay.types import TaskOptions
from assay.validate.gate import gate, gated_tasks
from assay.verifiers.code import CodeScorer
from assay.verifiers.code.gate import Run, gate_code, sandbox_runner
from assay.verifiers.math.gate import MathGate

pytestmark = pytest.mark.slow


def gate_math(proposals: list[dict[str, object]], engine: Engine, threshold: float = 0.6) -> list[Outcome]:
    context = GateContext(engine.settings, engine.score, scorer=lambda: None, threshold=threshold)
    return MathGate().keep(proposals, context)


PROPOSAL = {
    "id": "p1",
    "prompt": "What is one half of one?",
    "provenance": {"model": "proposer-7b", "step": 12},
}
# Three samples agree on 1/2 in three notations, one says 3, one has no answer.
SOLUTIONS = ["\\boxed{\\frac{1}{2}}", "The answer is 0.5", "so it is 1/2", "\\boxed{3}", "I do not know"]


def test_math_consensus_keeps_the_task_with_the_majority_answer_and_provenance(engine: Engine) -> None:
    ((findings, kept),) = gate_math([{**PROPOSAL, "solutions": SOLUTIONS}], engine, threshold=0.6)
    assert not findings and kept is not None
    assert kept["task"] == "math" and kept["prompt"] == PROPOSAL["prompt"]
    assert kept["reference"] in ("\\frac{1}{2}", "0.5", "1/2")
    assert kept["provenance"]["model"] == "proposer-7b" and kept["provenance"]["step"] == 12
    assert kept["provenance"]["gate"]["agreement"] == 0.6 and kept["provenance"]["gate"]["samples"] == 5
    assert "solutions" not in kept


def test_math_without_enough_agreement_is_dropped(engine: Engine) -> None:
    ((findings, kept),) = gate_math([{**PROPOSAL, "solutions": SOLUTIONS}], engine, threshold=0.8)
    assert kept is None and [f.check for f in findings] == ["no_consensus"]


def test_math_with_no_answer_in_any_sample_is_dropped(engine: Engine) -> None:
    ((findings, kept),) = gate_math([{**PROPOSAL, "solutions": ["", "  ", "\\boxed{}"]}], engine)
    assert kept is None and "no final answer" in findings[0].reason


def test_samples_that_each_say_something_else_have_no_consensus(engine: Engine) -> None:
    ((findings, kept),) = gate_math(
        [{**PROPOSAL, "solutions": ["\\boxed{1}", "\\boxed{2}", "\\boxed{3}"]}], engine
    )
    assert kept is None and "1 of 3 samples agree" in findings[0].reason


def test_a_proposal_without_solutions_says_what_it_needs(engine: Engine) -> None:
    ((findings, kept),) = gate_math([PROPOSAL], engine)
    assert kept is None and findings[0].check == "no_solutions"


def test_code_that_repeats_its_output_becomes_a_task_with_tests() -> None:
    def run(language: str, program: str, stdin: str) -> Run:
        return Run(0, str(int(stdin) * 2) + "\n")

    ((findings, kept),) = gate_code([{"id": "c", "program": "...", "inputs": ["2", "7"]}], run)
    assert not findings and kept is not None
    assert kept["tests"] == [{"stdin": "2", "stdout": "4\n"}, {"stdin": "7", "stdout": "14\n"}]
    assert kept["reference"] == "..." and kept["provenance"]["gate"]["runs_per_input"] == 2


def test_code_whose_runs_disagree_or_fail_is_dropped() -> None:
    counter = itertools.count()

    def changing(language: str, program: str, stdin: str) -> Run:
        return Run(0, f"{next(counter)}\n")

    ((findings, kept),) = gate_code([{"program": "...", "inputs": ["1"]}], changing)
    assert kept is None and findings[0].check == "nondeterministic"
    ((findings, kept),) = gate_code([{"program": "...", "inputs": ["1"]}], lambda *_: Run(1, ""))
    assert kept is None and findings[0].check == "execution_failed"
    ((findings, kept),) = gate_code([{"program": "", "inputs": []}], lambda *_: Run(0, ""))
    assert kept is None and findings[0].check == "malformed"


def test_the_sandbox_runner_tells_a_deterministic_program_from_a_random_one() -> None:
    from assay_testing import bwrap_works

    if not bwrap_works():
        pytest.fail("bubblewrap cannot run here; the code gate needs it")
    proposals = [
        {"id": "det", "program": "print(int(input()) + 1)", "inputs": ["1", "41"]},
        {"id": "rand", "program": "import os\nprint(os.urandom(8).hex())", "inputs": [""]},
        {"id": "loop", "program": "while True: pass", "inputs": [""]},
    ]
    scorer = CodeScorer(Settings())
    try:
        outcome = gate_code(proposals, sandbox_runner(scorer, wall_s=1.0))
    finally:
        scorer.close()
    (_, det_task), (rand, rand_task), (loop, loop_task) = outcome
    assert det_task is not None and det_task["tests"] == [
        {"stdin": "1", "stdout": "2\n"},
        {"stdin": "41", "stdout": "42\n"},
    ]
    assert rand_task is None and rand[0].check == "nondeterministic"
    assert loop_task is None and "killed" in loop[0].reason


class Given(Gate):
    """Keeps a proposal that states its own answer; never scores (so no engine starts)."""

    def keep(self, proposals: Sequence[dict[str, Any]], context: GateContext) -> list[Outcome]:
        return [
            ([], {**p, "reference": p["answer"]}) if "answer" in p else ([Finding("no_answer", "none")], None)
            for p in proposals
        ]


class GivenValidation(Validation):
    gate = Given()


class GivenTask(Scorer[TaskOptions]):
    name: ClassVar[str] = "given"
    validation: ClassVar[Validation] = GivenValidation()


def test_any_task_with_a_gate_is_gated_through_the_registry() -> None:
    settings = Settings(workers=1, plugins=[f"{__name__}:GivenTask"])
    assert "given" in gated_tasks(Registry.from_settings(settings))
    (kept_report, kept), (dropped_report, dropped) = gate("given", [{"id": "a", "answer": "1"}, {}], settings)
    assert (kept_report.id, kept_report.task, kept_report.valid, kept) == (
        "a",
        "given",
        True,
        {"id": "a", "answer": "1", "reference": "1"},
    )
    assert dropped is None and [p.check for p in dropped_report.problems] == ["no_answer"]
    with pytest.raises(ConfigError, match="no gate"):
        gate("judge", [{}], settings)
