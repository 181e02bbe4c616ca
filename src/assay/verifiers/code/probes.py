"""The code task's validation probes: the reference program, run `repeats` times, must pass every test
the same way each time; a program that prints nothing (or functions that return None) must earn nothing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from assay.registry import Finding, Validation, ValidationProbe
from assay.types import Item, Result
from assay.verifiers.code.fields import CodeFields
from assay.verifiers.code.gate import CodeGate


def _fenced(source: str, language: str) -> str:
    return source if "```" in source else f"```{language}\n{source}\n```"


class CodeValidation(Validation):
    gate = CodeGate()

    def most(self, repeats: int) -> int:
        return max(1, repeats) + 1

    def probes(self, index: int, item: Item, repeats: int) -> list[ValidationProbe]:
        fields = CodeFields.of(item)
        language = fields.language or "python"
        found = []
        if item.reference:
            program = _fenced(item.reference, language)
            found += [
                ValidationProbe.answer(index, item, program, "accepted", "the reference program", run)
                for run in range(max(1, repeats))
            ]
        if language == "python":
            names = sorted(
                {str(t["fn_name"]) for t in fields.tests or [] if isinstance(t, dict) and "fn_name" in t}
            )
            body = "\n".join(f"def {name}(*args, **kwargs):\n    return None" for name in names) or "pass"
            label = "functions that return None" if names else "a program that prints nothing"
            found.append(ValidationProbe.answer(index, item, _fenced(body, language), "rejected", label))
        return found

    def read_repeats(self, runs: Sequence[Result]) -> list[Finding]:
        """A test whose verdict changes between runs of the same program is not deterministic."""
        outcomes = [[t.get("verdict") for t in r.details.get("tests", [])] for r in runs]
        width = max(len(o) for o in outcomes)
        changing = []
        for test in range(width):
            seen = Counter(o[test] if test < len(o) else None for o in outcomes)
            if len(seen) > 1:
                changing.append(
                    f"test {test + 1} (" + ", ".join(f"{v} {n}x" for v, n in seen.most_common()) + ")"
                )
        if not changing:
            return []
        shown = "; ".join(changing[:5]) + ("; ..." if len(changing) > 5 else "")
        return [
            Finding("nondeterministic", f"the reference ends differently across {len(runs)} runs: {shown}")
        ]
