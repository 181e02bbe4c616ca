"""Assay's `math` verifier on math-verify's own test suite: a set of labelled pairs written by others.

    .venv/bin/python benchmarks/mathverify_suite.py [--cache DIR] [--verbose]

At run time this downloads math-verify 0.9.0's source distribution
(`pip download --no-binary :all: --no-deps math-verify==0.9.0`) into a cache folder and reads the
(gold, prediction, expected) rows of the `pytest.mark.parametrize` tables in its `tests/` files; nothing of
it is copied into this repository. Each pair is scored by Assay (`reference=gold`, `response=pred`) and by
math-verify's default call `verify(parse(gold), parse(pred))`, and both are compared with the suite's label.

Rows whose test calls math-verify with non-default settings (only the LaTeX or only the plain-expression
extractor, another float precision, `strict=False`, `allow_set_relation_comp=True`) are reported in a
second table: the label there is what those settings give, not what the default call should give.

Labels Assay disagrees with on purpose (a soundness rule of `assay.verifiers.math`) are listed with the
reason, and scored both ways: as written, and with the label corrected.

Target (issue 14): agreement >= math-verify's own default call, with no more false positives.
"""

from __future__ import annotations

import argparse
import ast
import logging
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer

VERSION = "0.9.0"
# Keyword settings of the suite's `compare_strings` helper that match `parse`/`verify` defaults.
DEFAULT_SETTINGS = {"match_types": ["latex", "expr"], "precision": 6, "strict": True}

# Labels that a soundness rule of assay.verifiers.math contradicts: (gold, pred) -> reason.
DISPUTED: dict[tuple[str, str], str] = {
    (
        "$1 - \\frac{1}{\\mathrm{e}}$",
        "$1 + \\frac{1}{\\mathrm{e}}$",
    ): "1 - 1/e and 1 + 1/e are different numbers (0.632 vs 1.368); the label 1 is a typo in the suite",
}


@dataclass(frozen=True)
class Row:
    file: str
    test: str
    gold: str
    pred: str
    expected: bool
    default: bool  # the test's settings are math-verify's defaults


def unpacked_sdist(cache: Path, package: str, version: str) -> Path:
    """The root folder of a package's unpacked source distribution (downloaded once into `cache`)."""
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


def fetch(cache: Path) -> Path:
    """math-verify's tests/ folder."""
    return unpacked_sdist(cache, "math-verify", VERSION) / "tests"


def _settings_of(function: ast.FunctionDef, argnames: list[str]) -> dict[str, object] | None:
    """The keyword settings of the `compare_strings(...)` call in a test, None for a plain
    `verify(parse(gold), parse(pred))`; a setting passed as a parameter is named by the parameter."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "compare_strings":
            settings: dict[str, object] = {}
            for keyword in node.keywords:
                if isinstance(keyword.value, ast.Name) and keyword.value.id in argnames:
                    settings[str(keyword.arg)] = f"param:{keyword.value.id}"
                else:
                    settings[str(keyword.arg)] = ast.literal_eval(keyword.value)
            return settings
    return None


def _is_default(settings: dict[str, object] | None, row: dict[str, object]) -> bool:
    if settings is None:
        return True
    resolved = {
        k: row[v[6:]] if isinstance(v, str) and v.startswith("param:") else v for k, v in settings.items()
    }
    if resolved.get("allow_set_relation_comp"):
        return False
    return all(resolved.get(key, value) == value for key, value in DEFAULT_SETTINGS.items())


def rows_of(path: Path) -> tuple[list[Row], int]:
    """The labelled pairs of one test file, and how many table rows could not be read as literals."""
    rows: list[Row] = []
    skipped = 0
    for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(function, ast.FunctionDef):
            continue
        for decorator in function.decorator_list:
            if not (isinstance(decorator, ast.Call) and "parametrize" in ast.unparse(decorator.func)):
                continue
            argnames = [a.strip() for a in ast.literal_eval(decorator.args[0]).split(",")]
            if argnames[:2] != ["gold", "pred"]:
                continue
            settings = _settings_of(function, argnames)
            table = decorator.args[1]
            for element in table.elts if isinstance(table, ast.List) else []:
                try:
                    row = dict(zip(argnames, ast.literal_eval(element), strict=True))
                except ValueError:
                    skipped += 1  # an f-string row (computed at import): not a literal pair
                    continue
                label = row.get("expected", row.get("result"))
                rows.append(
                    Row(
                        path.name,
                        function.name,
                        str(row["gold"]),
                        str(row["pred"]),
                        bool(label),
                        _is_default(settings, row),
                    )
                )
    return rows, skipped


def math_verify_default() -> Callable[[str, str], bool]:
    # benchmarks/math_verify.py sits next to this script and would shadow the package.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.CRITICAL)

    def call(gold: str, pred: str) -> bool:
        try:
            return bool(verify(parse(gold), parse(pred)))
        except Exception:
            return False

    return call


def _table(title: str, rows: list[Row], verdicts: dict[str, list[bool]], relabel: bool) -> None:
    labels = [not r.expected if relabel and (r.gold, r.pred) in DISPUTED else r.expected for r in rows]
    print(f"\n{title}: {len(rows)} pairs ({sum(labels)} positive)")
    print(f"{'verifier':<24}{'agree':>8}{'agree %':>9}{'FP':>5}{'FN':>5}")
    for name, got in verdicts.items():
        agree = sum(g == label for g, label in zip(got, labels, strict=True))
        fp = sum(g and not label for g, label in zip(got, labels, strict=True))
        fn = sum(label and not g for g, label in zip(got, labels, strict=True))
        print(f"{name:<24}{agree:>8}{100 * agree / max(len(rows), 1):>8.1f}%{fp:>5}{fn:>5}")


def _speed(rows: list[Row], scorer: MathScorer, options: MathOptions, mv: Callable[[str, str], bool]) -> None:
    """Warm per-item time on the same items (the verdict pass above warmed both), one core, same run."""
    start = time.perf_counter()
    for row in rows:
        scorer.score(Item(task="math", response=row.pred, reference=row.gold), options)
    assay_s = (time.perf_counter() - start) / len(rows)
    start = time.perf_counter()
    for row in rows:
        mv(row.gold, row.pred)
    mv_s = (time.perf_counter() - start) / len(rows)
    print(
        f"warm time per item: assay {1000 * assay_s:.2f} ms, math-verify default {1000 * mv_s:.2f} ms: "
        f"{mv_s / assay_s:.1f}x (target >= 5x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "assay-mathverify-suite")
    parser.add_argument("--verbose", action="store_true", help="print every disagreement with the label")
    args = parser.parse_args()
    tests = fetch(args.cache)
    rows: list[Row] = []
    skipped = 0
    for path in sorted(tests.glob("test_*.py")):
        found, missed = rows_of(path)
        rows += found
        skipped += missed
    scorer, options = MathScorer(Settings(workers=1, plugins=[])), MathOptions()
    mv = math_verify_default()
    assay_got, mv_got, why = [], [], []
    for row in rows:
        result = scorer.score(Item(task="math", response=row.pred, reference=row.gold), options)
        assay_got.append(result.correct is True)
        why.append(f"{result.status.value}: {result.reason}")
        mv_got.append(mv(row.gold, row.pred))
    print(f"math-verify {VERSION} tests/: {len(rows)} labelled pairs read, {skipped} computed rows skipped")
    _speed(rows, scorer, options, mv)
    for subset, title in ((True, "default settings"), (False, "non-default settings (reported apart)")):
        index = [i for i, r in enumerate(rows) if r.default == subset]
        chosen = [rows[i] for i in index]
        verdicts = {"assay": [assay_got[i] for i in index], "math-verify default": [mv_got[i] for i in index]}
        _table(f"{title}, labels as written", chosen, verdicts, relabel=False)
        if any((r.gold, r.pred) in DISPUTED for r in chosen):
            _table(f"{title}, disputed labels corrected", chosen, verdicts, relabel=True)
    print("\nlabels Assay disagrees with (reason):")
    for (gold, pred), reason in DISPUTED.items():
        print(f"  gold={gold!r} pred={pred!r}: {reason}")
    if args.verbose:
        print("\nAssay disagreements with the label (default settings first):")
        for i, row in sorted(enumerate(rows), key=lambda p: not p[1].default):
            if assay_got[i] != row.expected:
                kind = "FP" if assay_got[i] else "FN"
                mark = "default" if row.default else "non-default"
                print(
                    f"  {kind} [{mark}] {row.test}: gold={row.gold[:70]!r} pred={row.pred[:90]!r}",
                    f"mv={mv_got[i]} -> {why[i][:120]}",
                )


if __name__ == "__main__":
    main()
