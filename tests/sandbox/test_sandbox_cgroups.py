"""cgroup handling on fake hierarchies: v1, v2 with and without controllers (degrading with reasons)."""

from __future__ import annotations

from pathlib import Path

from assay.sandbox import cgroups


def make_v1(root: Path) -> None:
    for controller, files in (
        ("memory", ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.oom_control"]),
        ("pids", ["pids.max"]),
    ):
        (root / controller).mkdir(parents=True)
        for name in files:
            (root / controller / name).write_text("0\n")


def test_v1_slot_gets_memory_and_pids(tmp_path: Path) -> None:
    make_v1(tmp_path)
    # A real hierarchy creates the files with the directory; the fake needs them for the probe.
    for controller, name in (("memory", "memory.limit_in_bytes"), ("pids", "pids.max")):
        (tmp_path / controller / "assay" / "s0").mkdir(parents=True)
        (tmp_path / controller / "assay" / "s0" / name).write_text("0")
    (tmp_path / "memory" / "assay" / "s0" / "memory.memsw.limit_in_bytes").write_text("0")
    (tmp_path / "memory" / "assay" / "s0" / "memory.oom_control").write_text(
        "oom_kill_disable 0\noom_kill 3\n"
    )
    cg = cgroups.create("assay/s0", root=tmp_path)
    assert cg.version == 1 and not cg.unavailable
    cg.set_memory(123)
    cg.set_pids(7)
    assert (tmp_path / "memory/assay/s0/memory.limit_in_bytes").read_text() == "123"
    assert (tmp_path / "memory/assay/s0/memory.memsw.limit_in_bytes").read_text() == "123"
    assert (tmp_path / "pids/assay/s0/pids.max").read_text() == "7"
    assert cg.oom_kills() == 3
    assert len(cg.procs_files) == 2


def test_v2_without_controllers_degrades_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu io\n")
    cg = cgroups.create("assay/s0", root=tmp_path)
    assert cg.version == 0 and cg.memory is None and cg.pids is None
    assert any("no memory and pids controller" in reason for reason in cg.unavailable)
    assert cg.procs_files == [] and cg.oom_kills() == 0
    cg.set_memory(1)  # no-ops, no exceptions
    cg.set_pids(1)


def test_v2_with_controllers_uses_one_directory(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    cg = cgroups.create("assay/s0", root=tmp_path)
    assert cg.version == 2 and cg.memory == cg.pids == tmp_path / "assay" / "s0"
    assert (tmp_path / "assay" / "cgroup.subtree_control").read_text() == "+memory +pids"
    cg.set_memory(5 << 20)
    assert (cg.memory / "memory.max").read_text() == str(5 << 20)
    (cg.memory / "memory.events").write_text("low 0\noom 1\noom_kill 2\n")
    assert cg.oom_kills() == 2


def test_no_cgroup_filesystem_at_all(tmp_path: Path) -> None:
    cg = cgroups.create("assay/s0", root=tmp_path / "missing")
    assert cg.version == 0 and cg.unavailable
