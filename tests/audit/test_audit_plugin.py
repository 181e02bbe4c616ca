"""A task owns its audit probes (issue 36): `assay audit` finds the kinds in the registry, so a plugin
task that gives probes is audited with no edit to the audit, and the files its probes need are written
by the task itself (`audit_settings`)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from assay.audit.runner import probe_kinds, run_audit
from assay.registry import Audit, AuditProbe, Scorer
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions


class KeyedAudit(Audit):
    key_file: Path | None = None

    def probes(self, seed: int) -> list[AuditProbe]:
        return [
            AuditProbe("keyed_claim", "keyed", {"response": "I am right"}, "a claim of being right"),
            AuditProbe("keyed_controls", "keyed", {"response": "open sesame"}, "the key", "control", True),
            AuditProbe("keyed_controls", "keyed", {"response": "wrong"}, "a wrong key", "control", False),
        ]

    def settings(self, settings: Settings, workdir: Path) -> Settings:
        (workdir / "key.txt").write_text("open sesame")
        self.key_file = workdir / "key.txt"
        return settings


class Keyed(Scorer[TaskOptions]):
    """Rewards the response that equals the contents of a key file its audit settings point at; its bug:
    a response saying "I am right" is rewarded too."""

    name: ClassVar[str] = "keyed"
    runs_in = "async"
    audit: ClassVar[Audit] = KeyedAudit()

    async def ascore(self, item: Item, options: TaskOptions) -> Result:
        key_file = KEYED.key_file
        assert key_file is not None, "the audit's settings were written before scoring"
        response = item.response or ""
        right = response in (key_file.read_text(), "I am right")
        return Result.verdict(right, "keyed")


PLUGIN = f"{__name__}:Keyed"
KEYED = Keyed.audit
assert isinstance(KEYED, KeyedAudit)


def test_a_plugin_task_that_gives_probes_is_a_kind() -> None:
    kinds = probe_kinds(Settings(plugins=[PLUGIN]))
    assert set(kinds) == {"math", "code", "sql", "judge", "keyed"}  # prm and repo give none
    assert "keyed" not in probe_kinds(Settings())


def test_a_plugin_task_is_audited_with_its_own_probes_and_files() -> None:
    report = run_audit(Settings(workers=1, plugins=[PLUGIN]), ["keyed"])
    claim, controls = report.families["keyed_claim"], report.families["keyed_controls"]
    assert (claim.kind, claim.probes, claim.rewarded) == ("hack", 1, 1)
    assert (controls.kind, controls.probes, controls.rewarded) == ("control", 2, 2)  # both judged right


def test_an_unknown_kind_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown probe kinds \\['nope'\\]; known: code, judge, math, sql"):
        run_audit(Settings(workers=1), ["nope"])
