"""The `code` task: run the response's program against its tests in the sandbox, compare outside it.

Modules: blocks (which program in the response is the solution), compare (stdout and return values
against the expected ones, outside the sandbox), flags (a program that tables the visible tests), fields
(its item fields), scorer (the task: its options and verdicts), probes and gate (what `assay validate`
checks, and how it keeps proposed tasks), audit (the reward hacks `assay audit` tries), tool (the
`run_tests` session tool). What the verdict covers: docs/code.md and the scorer's own docstring.
"""

from assay.verifiers.code.scorer import CodeOptions, CodeScorer

TASK = "assay.verifiers.code:CodeScorer"  # this folder is the `code` task (assay.registry)

__all__ = ["CodeOptions", "CodeScorer"]
