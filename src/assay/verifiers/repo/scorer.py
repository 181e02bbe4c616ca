"""The `repo` task: apply the change to a private working copy, run the named tests in the sandbox.

Order of work per item (docs/repo.md has the reasons): make the working copy (at `base_commit`); check
and apply the change on the host (`patch`); scan what it touched (`workcopy.hygiene_flags`): a change
to tests or test configuration is flagged and, unless `reward_test_edits`, rewarded 0 without a run;
put back the files the hidden test patch touches and those of the named tests, then apply the hidden
patch on top, so it overrides the change; add a canary test that must fail; run pytest in the sandbox
(`run`); judge from the signed report only.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from assay.registry import Scorer, Validation
from assay.sandbox.base import Limits, SandboxError
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions
from assay.verifiers.repo import patch as patching
from assay.verifiers.repo.probes import RepoValidation
from assay.verifiers.repo.run import Report, TestRun, run_tests
from assay.verifiers.repo.task import RepoTask, TaskInvalid, parse_task
from assay.verifiers.repo.workcopy import (
    RepoNotFound,
    config_sections,
    hygiene_flags,
    resolve_repo,
    working_copy,
)

_SHOWN = 20  # failing tests named in details


class RepoOptions(TaskOptions):
    partial: bool = Field(False, description="Reward the fraction of named tests that pass, not all-or-none.")
    reward_test_edits: bool = Field(
        False, description="Run and reward a change that edits tests or test configuration (still flagged)."
    )
    time_limit_s: float | None = Field(None, gt=0, le=3600, description="CPU seconds for the test run.")
    memory_mb: int | None = Field(None, ge=64, le=65536, description="Memory of the test run, MiB.")


def _canary(copy: Path, task: RepoTask) -> tuple[str, bytes, list[str]]:
    """A test file beside the first named test, whose tests (named like the named ones) must fail:
    a report in which they pass was forged wholesale (a hook or patch that passes everything)."""
    first = task.fail_to_pass[0] if task.fail_to_pass else task.tests[0]
    where = Path(first.split("::", 1)[0])
    names = [n.split("::")[-1].split("[")[0] for n in task.tests]
    names = [n for n in dict.fromkeys(names) if n.isidentifier()][:5] or ["test_behaviour"]
    while True:
        path = str(where.parent / f"{where.stem}_{secrets.token_hex(3)}.py")
        if not (copy / path).exists():
            break
    source = "".join(f"def {n}():\n    assert False\n\n\n" for n in names)
    return path, source.encode(), [f"{path}::{n}" for n in names]


class RepoScorer(Scorer[RepoOptions]):
    name = "repo"
    description = "Apply a unified diff to a repository and run its pytest tests in the sandbox."
    Options: ClassVar[type[TaskOptions]] = RepoOptions
    item_fields: ClassVar[tuple[str, ...]] = (
        "repo",
        "response",
        "FAIL_TO_PASS",
        "PASS_TO_PASS",
        "base_commit",
        "test_patch",
        "test_cmd",
    )
    runs_in = "thread"
    gate: ClassVar[str] = "sandbox"
    work: ClassVar[str] = "code"  # git and the tests run in sandboxes: the code deployment has the slots
    tools: ClassVar[Mapping[str, str]] = {"repo": "assay.verifiers.repo.tools:RepoTool"}
    validation: ClassVar[Validation] = RepoValidation()

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: RepoOptions) -> float:
        return settings.repo.wall_s + 60.0  # copying, applying, the sandbox's start and teardown

    def score(self, item: Item, options: RepoOptions) -> Result:
        response = item.response or ""
        if len(response.encode("utf-8", "replace")) > self.settings.repo.max_diff_bytes:
            return Result.invalid(
                f"the response is longer than repo.max_diff_bytes ({self.settings.repo.max_diff_bytes})"
            )
        try:
            task = parse_task(item)
        except TaskInvalid as exc:
            return Result.invalid(str(exc))
        return self.judge(task, patching.extract_diff(response), options)

    def judge(self, task: RepoTask, diff: str, options: RepoOptions) -> Result:
        """The verdict on `diff` as the change for `task` (used by `score` and the preflight)."""
        root = self.settings.repo.repos
        if root is None:
            return Result.invalid("no repository root is configured: set ASSAY_REPOS")
        try:
            source = resolve_repo(root, task.repo)
            with working_copy(source, task.base_commit, self.settings.repo.workdir) as copy:
                return self._judge_in(copy, task, diff, options)
        except RepoNotFound as exc:
            return Result.invalid(str(exc))
        except (OSError, SandboxError, TimeoutError) as exc:
            return Result.error(f"the repository task could not run: {exc}")

    def _judge_in(self, copy: Path, task: RepoTask, diff: str, options: RepoOptions) -> Result:
        try:
            hidden = patching.inspect_diff(copy, task.test_patch).paths if task.test_patch else ()
            if task.test_patch:
                patching.check_applies(copy, task.test_patch)
        except patching.PatchRejected as exc:
            return Result.invalid(f"the hidden test patch cannot be applied to the base: {exc}")
        # The hidden patch's files and those the named tests live in are put back after the change.
        kept = dict.fromkeys((*hidden, *task.test_files))
        saved = {p: (copy / p).read_bytes() if (copy / p).is_file() else None for p in kept}
        flags: list[str] = []
        if diff:
            try:
                touched = patching.inspect_diff(copy, diff).paths
                before = config_sections(copy, touched)
                patching.apply_diff(copy, diff)
            except patching.PatchRejected as exc:
                return Result.verdict(False, f"the change does not apply: {exc}", extracted=diff[:2000])
            protected = set(hidden) | set(task.test_files)
            flags = hygiene_flags(touched, protected, before, config_sections(copy, touched))
            if flags and not options.reward_test_edits:
                reason = f"the change edits tests or test configuration ({', '.join(flags[:5])})"
                return Result.verdict(False, reason, details={"flags": flags}, extracted=diff[:2000])
        try:
            self._restore(copy, saved)
            if task.test_patch:
                patching.apply_diff(copy, task.test_patch)
        except patching.PatchRejected as exc:
            # It applies to the base (checked above): the change is what stops it, and that is the
            # policy's doing (a .gitattributes, a file turned into a directory), so ok and 0, not invalid.
            reason = f"the hidden test patch does not apply after the change: {exc}"
            return Result.verdict(False, reason, details={"flags": flags}, extracted=diff[:2000] or None)
        canary_path, canary_source, canary_ids = _canary(copy, task)
        (copy / canary_path).parent.mkdir(parents=True, exist_ok=True)
        (copy / canary_path).write_bytes(canary_source)
        run = TestRun(
            files=(*task.test_files, canary_path),
            wanted=(*task.tests, *canary_ids),
            pytest_args=task.pytest_args,
            python_path=("src",) if (copy / "src").is_dir() else (),
        )
        report = run_tests(
            copy, run, self._limits(options), bwrap_binary(self.settings), prefix_for(self.settings)
        )
        return self._verdict(task, report, canary_ids, flags, options, diff)

    @staticmethod
    def _restore(copy: Path, saved: dict[str, bytes | None]) -> None:
        """Put the hidden tests' files back as they were before the change: the hidden test patch (and
        the base's test files) override whatever the change did to them."""
        for path, data in saved.items():
            target = copy / path
            if patching.check_path(copy, path):
                raise patching.PatchRejected(f"the change turned {path!r} into a link")
            if data is None:
                if target.is_file():
                    target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)

    def _verdict(
        self,
        task: RepoTask,
        report: Report,
        canary: list[str],
        flags: list[str],
        options: RepoOptions,
        diff: str,
    ) -> Result:
        if not report.started and report.tampered is None:
            tail = report.run.get("stderr_tail", "")[-800:]
            raise SandboxError(
                f"pytest did not start in the sandbox (exit {report.run.get('exit_code')}): {tail}"
            )
        details: dict[str, Any] = {"flags": list(flags), "run": report.run}
        if report.tampered is not None:
            details["flags"].append("report_forged")
            return Result.verdict(False, f"the test report was forged: {report.tampered}", details=details)
        if any(report.passed(node) for node in canary):
            details["flags"].append("canary_passed")
            return Result.verdict(False, "a test that must fail passed: results were forged", details=details)
        not_passed = {n: report.outcomes.get(n, "missing") for n in task.tests if not report.passed(n)}
        f2p = sum(n not in not_passed for n in task.fail_to_pass)
        p2p = sum(n not in not_passed for n in task.pass_to_pass)
        details.update(
            fail_to_pass={"passed": f2p, "total": len(task.fail_to_pass)},
            pass_to_pass={"passed": p2p, "total": len(task.pass_to_pass)},
            not_passed=dict(list(not_passed.items())[:_SHOWN]),
            failures={n: report.texts[n][-1500:] for n in list(not_passed)[:3] if n in report.texts},
            collect_errors=report.collect_errors[:5],
        )
        correct = not not_passed
        reason = (
            f"FAIL_TO_PASS {f2p}/{len(task.fail_to_pass)}, PASS_TO_PASS {p2p}/{len(task.pass_to_pass)} pass"
        )
        if report.run.get("killed"):
            reason += f"; the run was stopped at its {report.run['killed']} limit"
        if not report.collected:
            reason += f"; the run ended before its tests were collected (exit {report.run.get('exit_code')})"
        extracted = diff[:2000] or None
        if options.partial:
            share = (f2p + p2p) / len(task.tests)
            return Result.partial(correct, share, reason, details=details, extracted=extracted)
        return Result.verdict(correct, reason, details=details, extracted=extracted)

    def _limits(self, options: RepoOptions) -> Limits:
        cfg = self.settings.repo
        return Limits(
            time_s=options.time_limit_s or cfg.time_limit_s,
            memory_mb=options.memory_mb or cfg.memory_mb,
            wall_s=cfg.wall_s,
            address_space=False,
            processes=self.settings.code.processes,
        )


def bwrap_binary(settings: Settings) -> str:
    from assay.sandbox.bwrap import find_bwrap

    return find_bwrap(settings.code.bwrap_path)


def prefix_for(settings: Settings) -> str:
    """The package prefix the tests run with; SandboxError when it is missing or has no pytest."""
    from assay.sandbox import runtime

    configured = settings.repo.python_prefix or settings.code.python_prefix
    try:
        prefix = runtime.check_prefix(configured)  # unset: the runtime `assay sandbox-runtime` built
    except ValueError as exc:
        raise SandboxError(str(exc)) from exc
    if prefix is None:
        raise SandboxError(
            "repo tasks need the sandbox runtime (it has pytest): run `assay sandbox-runtime`,"
            " or set repo.python_prefix"
        )
    if not (Path(prefix) / "_pytest").is_dir():
        raise SandboxError(
            f"the package prefix {prefix} has no pytest: add pytest to the runtime's package list and run"
            " `assay sandbox-runtime --force`, or point repo.python_prefix at a prefix that has it"
        )
    return prefix
