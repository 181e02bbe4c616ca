"""The verbose thinking demo (`runs/think_demo.py`, issue 40): its thinking is the work on sums whose
units carry and filler on the others, so NoThinking can pay on easy prompts and cost on hard ones."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from assay.rl_client.generate import Completion, Problem, SamplingParams
from assay.rl_client.runs.think_demo import (
    FILLER,
    THINK_CLOSE,
    answer_of,
    has_carry,
    mode_accuracy,
    operands,
    verbose_problems,
    verbose_target,
)


def test_a_carry_is_in_the_units() -> None:
    assert operands(Problem("p", "07+58=<think>", "65")) == (7, 58)
    assert has_carry(Problem("p", "07+58=<think>", "65"))
    assert not has_carry(Problem("p", "52+61=<think>", "113"))  # the tens carry, the units do not
    assert has_carry(Problem("p", "05+05=", "10"))


def test_the_thinking_on_a_carry_is_the_work_and_it_is_right() -> None:
    train, _ = verbose_problems(0, pool=400)
    rng = random.Random(1)
    carried = [p for p in train if has_carry(p)]
    assert carried
    for problem in carried:
        target = verbose_target(problem, rng, nothinking=0.0)
        a, b = operands(problem)
        work = re.fullmatch(r"(\d)\+(\d)=(\d+) (\d+)\+(\d+)\+1=(\d+) </think>(\d+)", target)
        assert work is not None, target
        units, tens = int(work[3]), int(work[6])
        assert (int(work[1]), int(work[2]), units) == (a % 10, b % 10, a % 10 + b % 10)
        assert (int(work[4]), int(work[5]), tens) == (a // 10, b // 10, a // 10 + b // 10 + 1)
        # the answer is the tens' sum then the units' digit: it copies the work
        assert work[7] == problem.reference == f"{tens}{units % 10}"


def test_the_thinking_on_an_easy_sum_is_filler_and_a_share_answers_at_once() -> None:
    train, _ = verbose_problems(0, pool=400)
    rng = random.Random(2)
    easy = [p for p in train if not has_carry(p)]
    targets = [(p, verbose_target(p, rng)) for p in easy for _ in range(5)]
    at_once = [t for _, t in targets if t.startswith(THINK_CLOSE)]
    assert 0.06 < len(at_once) / len(targets) < 0.14  # NOTHINKING_SHARE 0.1 of 2000 draws
    for problem, target in targets:
        assert answer_of(target) == problem.reference
        words = target.split(THINK_CLOSE)[0].split()
        assert all(w in FILLER for w in words)
        assert target in at_once or 2 <= len(words) <= 5


class Scripted:
    """Greedy answers by the prompt: right as it answers, right forced to NoThinking only without a carry."""

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        out = []
        for prompt in prompts:
            problem = Problem("p", prompt.removesuffix(THINK_CLOSE), "")
            a, b = operands(problem)
            forced = prompt.endswith(THINK_CLOSE)
            answer = str(a + b + (1 if forced and has_carry(problem) else 0))
            text = answer if forced else f"hmm {THINK_CLOSE}{answer}"
            out.append(Completion([1], [5] * len(text), text, [0.0] * len(text), False))
        return out


def test_mode_accuracy_forces_the_closing_tag_and_scores_the_answer_after_it() -> None:
    problems = [Problem("a", "07+58=<think>", "65"), Problem("b", "12+30=<think>", "42")]
    assert mode_accuracy(Scripted(), problems) == {"free": 1.0, "nothinking": 0.5}  # type: ignore[arg-type]
