"""The `run_tests` tool for code items: run a program on the item's public `tests` and show each outcome.

It runs the program exactly as the `code` task does (the same `CodeScorer`, the same sandbox), on the
item's `tests` only: `hidden_tests` never reach a tool call, so the policy can see how it does on the
public tests but not learn the hidden ones; only `verify` (the `code` task's verdict) counts them.
The observation gives per test its verdict and, for a failed one, the tail of its stderr; never an
expected output the prompt did not already show.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from pydantic import Field

from assay.sessions.tools import (
    OK,
    TOOL_ERROR,
    Observation,
    SessionContext,
    Tool,
    ToolArguments,
    ToolUnavailable,
)
from assay.types import Item
from assay.verifiers.code.fields import CodeFields

_STDERR_SHOWN = 400


class RunTestsArguments(ToolArguments):
    code: str = Field(
        description="The whole program to test (the same form as the final answer).", max_length=1 << 20
    )


class RunTestsTool(Tool[RunTestsArguments]):
    name = "run_tests"
    description = (
        "Run a program on the task's public tests in a sandbox and see, per test, whether it passed"
        " (or its error). The final answer is also judged on tests you do not see."
    )
    Arguments = RunTestsArguments

    @cached_property
    def scorer(self) -> Any:
        from assay.verifiers.code import CodeScorer

        return CodeScorer(self.settings)

    def check(self, item: Item) -> None:
        if not CodeFields.of(item).tests:
            raise ToolUnavailable("the run_tests tool needs a code item with public tests")

    def call(self, session: SessionContext, state: Any, arguments: RunTestsArguments) -> Observation:
        from assay.types import Status

        item, fields = session.item, CodeFields.of(session.item)
        language = fields.language or "python"
        program = self.scorer.item_model()(
            task="code",
            language=language,
            tests=fields.tests,
            options=item.options,
            response=f"```{language}\n{arguments.code}\n```",
        )
        result = self.scorer.score(program, self.scorer.parse_options(item.options))
        if result.status is not Status.OK:
            return Observation(
                f"the tests could not run: {result.reason}", TOOL_ERROR, f"tests_{result.status}"
            )
        details = result.details
        if "compile_error" in details:
            return Observation(
                f"compile error:\n{details['compile_error'][-2000:]}", OK, details={"passed": 0}
            )
        lines = []
        for index, test in enumerate(details.get("tests", []), 1):
            line = f"test {index}: {test.get('verdict')}" + (f" ({test['why']})" if test.get("why") else "")
            stderr = test.get("stderr")
            if test.get("verdict") != "passed" and stderr:
                line += "\n  " + str(stderr)[-_STDERR_SHOWN:].replace("\n", "\n  ")
            lines.append(line)
        passed, total = details.get("passed", 0), details.get("total", len(lines))
        lines.append(f"{passed}/{total} public tests passed")
        return Observation("\n".join(lines), OK, details={"passed": passed, "total": total})

    def close(self, state: Any) -> None:
        """Nothing per session: the scorer's sandbox pool is shared by the server's sessions."""

    def shutdown(self) -> None:
        if "scorer" in self.__dict__:
            self.scorer.close()
