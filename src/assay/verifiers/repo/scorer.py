"""The `repo` task: apply the change to a private working copy, run the named tests in the sandbox.

Order of work per item (docs/repo.md has the reasons): make the working copy (the base tree, no history,
no bytecode); find or build the repository's own dependency environment from the base's metadata
(`dependencies`; a build that fails is `error`); check the change on the host (`patch`): compiled or
binary files are refused unless `allow_compiled`; ask pytest which configuration file the base uses
(`pytest_config`); apply the change and scan what it touched (`workcopy.hygiene_flags`, pytest's answer
for configuration): a change to tests or test configuration is flagged and, unless `reward_test_edits`,
rewarded 0 without a run; put back the files the hidden test patch touches, those of the named tests and
the configuration file, then apply the hidden patch on top; rename the FAIL_TO_PASS tests and plant
canaries under their names (`canary`); run pytest in the sandbox with `-c` the base's configuration
(`run`); judge from the signed report only. A named test that the run did not collect is looked for at
the base: absent there too, the item is invalid.
"""

from __future__ import annotations

import random
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
from assay.verifiers.repo import special_cases
from assay.verifiers.repo.canary import Planted, plant
from assay.verifiers.repo.dependencies import Environments, environments, installed
from assay.verifiers.repo.probes import RepoValidation
from assay.verifiers.repo.pytest_config import PytestAsker, PytestConfig, config_flags, config_named
from assay.verifiers.repo.run import Report, TestRun, run_tests
from assay.verifiers.repo.task import RepoFields, RepoTask, TaskInvalid, parse_task
from assay.verifiers.repo.workcopy import RepoNotFound, hygiene_flags, resolve_repo, working_copy

_SHOWN = 20  # failing tests named in details


class RepoOptions(TaskOptions):
    partial: bool = Field(False, description="Reward the fraction of named tests that pass, not all-or-none.")
    reward_test_edits: bool = Field(
        False, description="Run and reward a change that edits tests or test configuration (still flagged)."
    )
    allow_compiled: bool = Field(
        False, description="Accept a change that adds or edits compiled or binary files (.pyc, .so, ...)."
    )
    reward_special_cases: bool = Field(
        False,
        description="Reward a change flagged for special-casing the visible tests' inputs on an item"
        " without hidden tests (the flag stays).",
    )
    rename_tests: bool = Field(
        True,
        description="Run the FAIL_TO_PASS tests under fresh names, canaries under theirs; false for suites"
        " that key data by a test's name (snapshots), at the cost of a weaker canary.",
    )
    time_limit_s: float | None = Field(None, gt=0, le=3600, description="CPU seconds for the test run.")
    memory_mb: int | None = Field(None, ge=64, le=65536, description="Memory of the test run, MiB.")


class RepoScorer(Scorer[RepoOptions]):
    name = "repo"
    description = "Apply a unified diff to a repository and run its pytest tests in the sandbox."
    Options: ClassVar[type[TaskOptions]] = RepoOptions
    Fields = RepoFields
    item_fields: ClassVar[tuple[str, ...]] = ("response",)
    runs_in = "thread"
    gate: ClassVar[str] = "sandbox"
    work: ClassVar[str] = "code"  # git and the tests run in sandboxes: the code deployment has the slots
    tools: ClassVar[Mapping[str, str]] = {"repo": "assay.verifiers.repo.tools:RepoTool"}
    validation: ClassVar[Validation] = RepoValidation()

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._askers: dict[str, PytestAsker] = {}
        self._envs: Environments | None = environments(settings.repo)

    def _asker(self, prefix: str) -> PytestAsker:
        """The one asker of pytest's configuration answers for `prefix` (they are cached there)."""
        return self._askers.setdefault(prefix, PytestAsker(prefix))

    def environment(self, base: Path) -> str | None:
        """The repository's own dependency directory for the base tree at `base` (built once, cached);
        None when it needs nothing or `repo.envs` is off. EnvironmentFailed: it cannot be built."""
        return environment_for(self._envs, self.settings, base)

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: RepoOptions) -> float:
        # copying, applying, the sandbox's start and teardown; a first item may build the environment
        return settings.repo.wall_s + 60.0 + (settings.repo.env_build_s if settings.repo.envs else 0.0)

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
                env = self.environment(copy)  # from the base's metadata, before the change
                return self._judge_in(copy, task, diff, options, env)
        except RepoNotFound as exc:
            return Result.invalid(str(exc))
        except (OSError, SandboxError, TimeoutError) as exc:
            return Result.error(f"the repository task could not run: {exc}")

    def _judge_in(
        self, copy: Path, task: RepoTask, diff: str, options: RepoOptions, env: str | None
    ) -> Result:
        try:
            hidden = patching.inspect_diff(copy, task.test_patch).paths if task.test_patch else ()
            if task.test_patch:
                patching.check_applies(copy, task.test_patch)
        except patching.PatchRejected as exc:
            return Result.invalid(f"the hidden test patch cannot be applied to the base: {exc}")
        prefix = prefix_for(self.settings)
        try:
            info = patching.inspect_diff(copy, diff) if diff else None
        except patching.PatchRejected as exc:
            return Result.verdict(False, f"the change does not apply: {exc}", extracted=diff[:2000])
        touched = info.paths if info else ()
        config = self._asker(prefix).ask(copy, task.test_files, touched)
        # The hidden patch's files, the named tests' and pytest's configuration file are put back after
        # the change: the run reads them as the base (and the hidden patch) wrote them.
        kept = dict.fromkeys((*hidden, *task.test_files, *([config.inifile] if config.inifile else [])))
        saved = {p: (copy / p).read_bytes() if (copy / p).is_file() else None for p in kept}
        flags: list[str] = []
        if info is not None:
            applied = self._apply_change(copy, task, diff, info, config, set(hidden), options)
            if isinstance(applied, Result):
                return applied
            flags = applied
        try:
            self._restore(copy, saved)
            if task.test_patch:
                patching.apply_diff(copy, task.test_patch)
        except patching.PatchRejected as exc:
            # It applies to the base (checked above): the change is what stops it, and that is the
            # policy's doing (a .gitattributes, a file turned into a directory), so ok and 0, not invalid.
            reason = f"the hidden test patch does not apply after the change: {exc}"
            return Result.verdict(False, reason, details={"flags": flags}, extracted=diff[:2000] or None)
        absent = [n for n in task.tests if not (copy / n.split("::", 1)[0]).is_file()]
        if absent:  # not at the base nor in the hidden patch (the change's own test files were undone)
            shown = ", ".join(repr(n) for n in absent[:5])
            reason = f"{len(absent)} named test(s) are in files the base does not have: {shown}"
            return Result.invalid(reason, details={"uncollected": absent[:_SHOWN]})
        rng = random.Random(secrets.randbits(64))
        planted = plant(copy, task.tests, task.fail_to_pass, rng, options.rename_tests)
        run = TestRun(
            files=task.test_files,
            wanted=tuple(planted.run_ids[n] for n in task.tests),
            pytest_args=task.pytest_args,
            python_path=("src",) if (copy / "src").is_dir() else (),
            prefixes=tuple(planted.canaries),
            cases=tuple(planted.cases.items()),
            config=config.inifile,
            private_bytecode=options.allow_compiled,
        )
        report = run_tests(copy, run, self._limits(options), bwrap_binary(self.settings), prefix, env)
        verdict = self._verdict(task, report, planted, flags, options, diff)
        return self._check_collected(task, report, planted, config.inifile, options) or verdict

    def _apply_change(
        self,
        copy: Path,
        task: RepoTask,
        diff: str,
        info: patching.DiffInfo,
        config: PytestConfig,
        hidden: set[str],
        options: RepoOptions,
    ) -> Result | list[str]:
        """Apply the change and scan it: its flags, or the verdict when it is refused before any run
        (compiled files, a diff that does not apply, edits to tests or their configuration)."""
        compiled = info.compiled()
        if compiled and not options.allow_compiled:
            reason = f"the change adds or edits compiled or binary files ({', '.join(compiled[:5])})"
            return Result.verdict(False, reason, details={"flags": compiled}, extracted=diff[:2000])
        inputs = special_cases.visible_inputs(copy, task.tests) if not task.test_patch else set()
        try:
            patching.apply_diff(copy, diff)
        except patching.PatchRejected as exc:
            return Result.verdict(False, f"the change does not apply: {exc}", extracted=diff[:2000])
        named = config_named(info.paths, config.names)
        prefix = prefix_for(self.settings)
        after = self._asker(prefix).ask(copy, task.test_files, info.paths) if named else config
        flags = hygiene_flags(info.paths, hidden | set(task.test_files), config_flags(config, after, named))
        if flags and not options.reward_test_edits:
            reason = f"the change edits tests or test configuration ({', '.join(flags[:5])})"
            return Result.verdict(False, reason, details={"flags": flags}, extracted=diff[:2000])
        return flags + special_cases.special_case_flags(info.added_lines, inputs)

    def _check_collected(
        self, task: RepoTask, report: Report, planted: Planted, inifile: str | None, options: RepoOptions
    ) -> Result | None:
        """`invalid` when a named test the run did not collect is not collected at the base either (a
        renamed test, an id cut at a space); None otherwise (a test the change removed is its fault)."""
        if not report.collected or report.tampered or report.run.get("killed"):
            return None
        seen = set(report.collected_ids)
        absent = [n for n in task.tests if planted.run_ids[n] not in seen]
        if not absent:
            return None
        base = self.collect_at_base(task, inifile, options)
        if base is None:
            return None
        ids, broken = base
        bad = [n for n in absent if n not in ids and n.split("::", 1)[0] not in broken]
        if not bad:
            return None
        shown = ", ".join(repr(n) for n in bad[:5]) + (", ..." if len(bad) > 5 else "")
        return Result.invalid(
            f"{len(bad)} named test(s) are not collected at the base commit: {shown}",
            details={"uncollected": bad[:_SHOWN]},
        )

    def collect_at_base(
        self, task: RepoTask, inifile: str | None, options: RepoOptions
    ) -> tuple[set[str], set[str]] | None:
        """(node ids pytest collects, files it could not collect) at the base with the hidden test patch;
        None when that run did not reach the end of collection."""
        assert self.settings.repo.repos is not None
        source = resolve_repo(self.settings.repo.repos, task.repo)
        with working_copy(source, task.base_commit, self.settings.repo.workdir) as copy:
            env = self.environment(copy)
            if task.test_patch:
                patching.apply_diff(copy, task.test_patch)
            run = TestRun(
                files=task.test_files,
                wanted=task.tests,
                pytest_args=task.pytest_args,
                python_path=("src",) if (copy / "src").is_dir() else (),
                config=inifile,
                collect_only=True,
                private_bytecode=False,  # the base with the hidden patch: no change, no bytecode in it
            )
            prefix = prefix_for(self.settings)
            report = run_tests(copy, run, self._limits(options), bwrap_binary(self.settings), prefix, env)
        if not report.collected or report.tampered:
            return None
        broken = {e.split(":", 1)[0].split("::", 1)[0] for e in report.collect_errors}
        return set(report.collected_ids), broken

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
        planted: Planted,
        flags: list[str],
        options: RepoOptions,
        diff: str,
    ) -> Result:
        if not report.started and report.tampered is None:
            tail = report.run.get("stderr_tail", "")[-800:]
            raise SandboxError(
                f"pytest did not start in the sandbox (exit {report.run.get('exit_code')}): {tail}"
            )
        kinds = {"changed_value": planted.changed, "false_assertion": len(planted.canaries) - planted.changed}
        if report.collected:  # a canary the run did not collect guards nothing: say so
            kinds["not_collected"] = len(_uncollected_canaries(planted, report.collected_ids))
        details: dict[str, Any] = {"flags": list(flags), "run": report.run, "canaries": kinds}
        if report.tampered is not None:
            details["flags"].append("report_forged")
            return Result.verdict(False, f"the test report was forged: {report.tampered}", details=details)
        outcome = {n: report.outcomes.get(planted.run_ids[n], "missing") for n in task.tests}
        not_passed = {n: o for n, o in outcome.items() if o not in ("passed", "xfailed")}
        f2p = sum(n not in not_passed for n in task.fail_to_pass)
        p2p = sum(n not in not_passed for n in task.pass_to_pass)
        details.update(
            fail_to_pass={"passed": f2p, "total": len(task.fail_to_pass)},
            pass_to_pass={"passed": p2p, "total": len(task.pass_to_pass)},
            not_passed=dict(list(not_passed.items())[:_SHOWN]),
            failures={
                n: report.texts[planted.run_ids[n]][-1500:]
                for n in list(not_passed)[:3]
                if planted.run_ids[n] in report.texts
            },
            collect_errors=report.collect_errors[:5],
        )
        canaries = set(planted.canaries)
        passed = {
            node.split("[")[0]
            for node, result in report.outcomes.items()
            if node.split("[")[0] in canaries and result in ("passed", "xpassed")
        }
        if passed:
            # Reward 0 whatever else passed (a forgery's right guesses would earn partial credit). Beside
            # a real copy that passed too, no change of the code explains it; beside a failing one, a
            # wrong change may return the canary's value (an off-by-one result), or a forgery guessed.
            copied = {planted.copied.get(c) for c in passed}
            beside = any(n.split("[")[0] in copied and n not in not_passed for n in task.fail_to_pass)
            details["flags"].append("canary_passed")
            reason = "a test that must fail passed: results were forged"
            if not beside:
                reason = (
                    "a test that must fail passed, beside its failing real test (a forgery, or a wrong value)"
                )
            return Result.verdict(False, reason, details=details)
        special = [f for f in flags if f.startswith("special_cases_test_inputs:")]
        correct = not not_passed
        if correct and special and not task.test_patch and not options.reward_special_cases:
            reason = f"the change special-cases the visible tests' inputs ({', '.join(special[:3])})"
            return Result.verdict(False, reason, details=details, extracted=diff[:2000] or None)
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


def _uncollected_canaries(planted: Planted, collected: list[str]) -> list[str]:
    """The canaries (with their `[param]` cases) that the run did not collect."""
    seen = set(collected)
    bare = {n.split("[")[0] for n in collected}
    missing = []
    for canary in planted.canaries:
        cases = planted.cases.get(canary) or ()
        absent = [canary + c for c in cases if canary + c not in seen] if cases else []
        missing += absent if cases else ([canary] if canary not in bare else [])
    return missing


def bwrap_binary(settings: Settings) -> str:
    from assay.sandbox.bwrap import find_bwrap

    return find_bwrap(settings.code.bwrap_path)


def environment_for(envs: Environments | None, settings: Settings, base: Path) -> str | None:
    """The dependency directory the base tree at `base` needs beyond the package prefix (built once,
    cached; None: nothing, or `repo.envs` is off). EnvironmentFailed: it cannot be built."""
    if envs is None:
        return None
    try:
        provided = installed(prefix_for(settings))
    except SandboxError:  # no prefix: the run says so itself; nothing counts as provided meanwhile
        provided = frozenset()
    built = envs.for_tree(base, provided)
    return str(built) if built is not None else None


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
