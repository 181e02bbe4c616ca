"""`assay new-task NAME`: write a working task folder, so a new task is one folder and its tests.

The folder (`src/assay/verifiers/NAME/`) holds the scorer and its options, one session tool, the task's
validation and audit probes and its page; `tests/verifiers/NAME/` its tests. The registry finds the
folder by its `TASK` line (assay.registry.folder_tasks), so with no other edit the task is listed by
`GET /v1/tasks` with its tool, scores items, is validated by `assay validate`, audited by `assay audit`
and routed by its kind of work under `assay serve --ray`. The template is an exact-match task: replace
its `score` and probes with the task's own.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from collections.abc import Sequence
from pathlib import Path

_NAME = re.compile(r"[a-z][a-z0-9_]{1,30}")

INIT = '''"""The `{name}` task, written by `assay new-task`: this folder is the whole task (README.md)."""

from assay.verifiers.{name}.scorer import {title}Options, {title}Scorer

TASK = "assay.verifiers.{name}:{title}Scorer"  # this folder is the `{name}` task (assay.registry)

__all__ = ["{title}Options", "{title}Scorer"]
'''

SCORER = '''"""The `{name}` task: the response's last line must equal the reference (`assay new-task`'s
template: replace `score`, the probes and the tool with the task's own)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from assay.registry import Audit, AuditProbe, Scorer, Validation, ValidationProbe
from assay.types import Item, Result, TaskOptions


class {title}Options(TaskOptions):
    case_sensitive: bool = Field(False, description="Compare letters' case too.")


def answer_of(response: str) -> str:
    """The answer a response gives: its last non-empty line, stripped."""
    lines = [line.strip() for line in response.splitlines() if line.strip()]
    return lines[-1] if lines else ""


class {title}Validation(Validation):
    """What `assay validate` checks: the reference as an answer is accepted, an empty one rejected."""

    def most(self, repeats: int) -> int:
        return 2

    def probes(self, index: int, item: Item, repeats: int) -> list[ValidationProbe]:
        found = [ValidationProbe.answer(index, item, "", "rejected", "an empty response")]
        if item.reference:
            found.insert(0, ValidationProbe.answer(index, item, item.reference, "accepted", "the reference"))
        return found


class {title}Audit(Audit):
    """What `assay audit` tries: a hack a policy finds (the answer, then a hedge) and honest controls."""

    def probes(self, seed: int) -> list[AuditProbe]:
        item = {{"prompt": "Name the capital of France.", "reference": "Paris"}}
        hedge, right, wrong = ({{**item, "response": r}} for r in ("Paris\\nor Lyon", "Paris", "Lyon"))
        return [
            AuditProbe("{name}_hedge", "{name}", hedge, "the answer, then a hedge"),
            AuditProbe("{name}_controls", "{name}", right, "the right answer", "control", True),
            AuditProbe("{name}_controls", "{name}", wrong, "a wrong answer", "control"),
        ]


class {title}Scorer(Scorer[{title}Options]):
    name: ClassVar[str] = "{name}"
    description: ClassVar[str] = "The response's last line equals the reference."
    Options: ClassVar[type[TaskOptions]] = {title}Options
    item_fields: ClassVar[tuple[str, ...]] = ("response", "reference")
    runs_in = "process"  # CPU work in the killable worker pool; "async" for network-bound work
    work: ClassVar[str] = "scorers"  # its Ray deployment under `assay serve --ray`
    tools: ClassVar[Mapping[str, str]] = {{"{name}_check": "assay.verifiers.{name}.tool:CheckTool"}}
    validation: ClassVar[Validation] = {title}Validation()  # what `assay validate` checks
    audit: ClassVar[Audit] = {title}Audit()  # what `assay audit` tries

    def score(self, item: Item, options: {title}Options) -> Result:
        if not item.reference:
            return Result.invalid("{name} items need a reference")
        given, gold = answer_of(item.response or ""), item.reference.strip()
        if not options.case_sensitive:
            given, gold = given.casefold(), gold.casefold()
        if not given:
            return Result.verdict(False, "no answer found", extracted="")
        reason = "exact match" if given == gold else "a different answer"
        return Result.verdict(given == gold, reason, extracted=given)
'''

TOOL = '''"""The `{name}_check` session tool: whether an answer is well formed (one non-empty line),
never the reference; it keeps no state, so `open` and `close` are the base class's."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from assay.sessions.tools import OK, TOOL_ERROR, Observation, SessionContext, Tool, ToolArguments


class CheckArguments(ToolArguments):
    answer: str = Field(description="The answer to check, as you would give it.", max_length=10_000)


class CheckTool(Tool[CheckArguments]):
    name: ClassVar[str] = "{name}_check"
    description: ClassVar[str] = "Check that an answer is well formed (one non-empty line)."
    Arguments: ClassVar[type[CheckArguments]] = CheckArguments

    def call(self, session: SessionContext, state: Any, arguments: CheckArguments) -> Observation:
        lines = [line for line in arguments.answer.splitlines() if line.strip()]
        if len(lines) == 1:
            return Observation("well formed", OK)
        return Observation(f"give one non-empty line (got {{len(lines)}})", TOOL_ERROR)
'''

PAGE = """# The `{name}` task

Written by `assay new-task {name}`. This folder is the whole task: `scorer.py` (the verdict and its
options, the validation and audit probes, the kind of work), `tool.py` (the `{name}_check` session tool)
and this page; its tests are in `tests/verifiers/{name}/`. Nothing else names it: the registry finds the
folder by the `TASK` line of its `__init__.py`.

An item: `{{"task": "{name}", "response": "...\\nParis", "reference": "Paris"}}`; the reward is 1 when the
response's last line equals the reference (`case_sensitive`: false by default).
"""

TEST = '''"""The `{name}` task as `assay new-task` wrote it: it scores, its tool answers, its probes hold."""

from __future__ import annotations

from assay.registry import Registry
from assay.sessions.limits import SessionLimits
from assay.sessions.tools import SessionContext
from assay.settings import Settings
from assay.types import Item
from assay.verifiers.{name}.scorer import {title}Options, {title}Scorer
from assay.verifiers.{name}.tool import CheckArguments, CheckTool


def test_the_task_is_registered_with_its_tool() -> None:
    assert Registry.from_settings(Settings())["{name}"] is {title}Scorer
    assert "{name}_check" in {title}Scorer.tools


def test_the_last_line_is_compared_with_the_reference() -> None:
    scorer = {title}Scorer(Settings())
    right = scorer.score(Item(task="{name}", response="So:\\nparis", reference="Paris"), {title}Options())
    wrong = scorer.score(Item(task="{name}", response="Lyon", reference="Paris"), {title}Options())
    strict = scorer.score(
        Item(task="{name}", response="paris", reference="Paris"), {title}Options(case_sensitive=True)
    )
    assert (right.reward, wrong.reward, strict.reward) == (1.0, 0.0, 0.0)


def test_the_check_tool_never_shows_the_reference() -> None:
    context = SessionContext("s-1", Item(task="{name}", reference="Paris"), SessionLimits())
    tool = CheckTool(Settings())
    assert tool.call(context, None, CheckArguments(answer="Lyon")).status == "ok"
    bad = tool.call(context, None, CheckArguments(answer="a\\nb"))
    assert bad.status == "tool_error" and "Paris" not in bad.text


def test_the_reference_is_probed_as_accepted_and_silence_as_rejected() -> None:
    probes = {title}Scorer.validation.probes(0, Item(task="{name}", reference="Paris"), 3)
    assert [(p.expect, p.item["response"]) for p in probes] == [("accepted", "Paris"), ("rejected", "")]
'''

FILES = {
    "src/assay/verifiers/{name}/__init__.py": INIT,
    "src/assay/verifiers/{name}/scorer.py": SCORER,
    "src/assay/verifiers/{name}/tool.py": TOOL,
    "src/assay/verifiers/{name}/README.md": PAGE,
    "tests/verifiers/{name}/test_{name}.py": TEST,
}


def check_name(name: str, root: Path) -> str | None:
    """Why `name` cannot be a new task under `root`; None when it can."""
    if not _NAME.fullmatch(name) or keyword.iskeyword(name):
        return f"{name!r} is not a task name: lower-case letters, digits and _, starting with a letter"
    if (root / "src/assay/verifiers" / name).exists():
        return f"src/assay/verifiers/{name} exists already"
    if not (root / "src/assay/verifiers").is_dir():
        return f"{root} is not an Assay checkout (no src/assay/verifiers): pass --root"
    return None


def write_task(name: str, root: Path) -> list[Path]:
    """Write the task's files under `root` (a checkout); the paths written."""
    title = "".join(part.capitalize() for part in name.split("_"))
    written = []
    for pattern, template in FILES.items():
        path = root / pattern.format(name=name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(name=name, title=title), encoding="utf-8")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="assay new-task", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("name", help="the task's name (lower-case, e.g. lean_proof)")
    parser.add_argument(
        "--root", type=Path, default=Path.cwd(), help="the checkout to write into (default: .)"
    )
    args = parser.parse_args(argv)
    problem = check_name(args.name, args.root)
    if problem is not None:
        print(f"assay new-task: {problem}", file=sys.stderr)
        return 2
    for path in write_task(args.name, args.root):
        print(path.relative_to(args.root))
    return 0
