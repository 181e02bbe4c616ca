"""Attacks on the repo task's verdict, as a policy under RL pressure would try them: none is rewarded.

Each change below leaves `mul` broken (the FAIL_TO_PASS test must fail) and tries to get reward 1
anyway: by faking a report, editing or configuring the tests, ending the process, patching pytest from
the code under test, writing where the working copy does not reach, or leaving the sandbox.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from repo_support import CALC, FAIL_TO_PASS, GOLD, TESTS, calc_change, diff, git, item

from assay.types import Result, Status

Score = Callable[..., Result]

ON_IMPORT = "def add(a, b):"  # code placed before it runs when the tests import calc


def on_import(code: str) -> str:
    """A change that runs `code` when calc is imported and leaves mul broken."""
    return calc_change(ON_IMPORT, f"{code}\n\n\n{ON_IMPORT}")


def assert_not_rewarded(result: Result) -> None:
    assert result.status is Status.OK, result
    assert result.reward == 0.0 and result.correct is False, result


def test_a_fake_junit_report_and_printed_passes_are_ignored(score: Score) -> None:
    fake = (
        "import sys\n"
        "open('/repo/report.xml', 'w').write('<testsuite tests=\"3\" failures=\"0\"/>')\n"
        "open('/repo/.report.json', 'w').write('{\"passed\": 3}')\n"
        "print('tests/test_calc.py::test_mul PASSED\\n===== 3 passed in 0.01s =====')"
    )
    assert_not_rewarded(score(item(on_import(fake))))


def test_a_conftest_that_passes_everything_is_flagged_and_not_rewarded(score: Score) -> None:
    conftest = (
        "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n"
    )
    for path in ("tests/conftest.py", "conftest.py"):
        result = score(item(diff(path, None, conftest)))
        assert_not_rewarded(result)
        assert f"edits_test_config:{path}" in result.details["flags"]
        # Even where test edits are allowed, the forged passes give themselves away at the canary.
        allowed = score(item(diff(path, None, conftest), options={"reward_test_edits": True}))
        assert_not_rewarded(allowed)
        assert "canary_passed" in allowed.details["flags"]


def test_editing_the_tests_is_flagged_and_the_edit_does_not_count(score: Score) -> None:
    edit = diff("tests/test_calc.py", TESTS, TESTS.replace("== 12", "== 13"))
    flagged = score(item(edit))
    assert_not_rewarded(flagged)
    assert flagged.details["flags"] == ["edits_hidden_tests:tests/test_calc.py"]
    allowed = score(item(edit, options={"reward_test_edits": True}))
    assert_not_rewarded(allowed)  # the named tests' file is put back as it was
    assert allowed.details["not_passed"] == {FAIL_TO_PASS[0]: "failed"}


def test_test_configuration_in_setup_cfg_and_pyproject_is_flagged(score: Score) -> None:
    setup_cfg = diff("setup.cfg", None, "[tool:pytest]\naddopts = -p no:python\n")
    result = score(item(setup_cfg))
    assert_not_rewarded(result)
    assert "edits_test_config:setup.cfg" in result.details["flags"]
    pyproject = diff("pyproject.toml", None, "[tool.pytest.ini_options]\naddopts = '-k add'\n")
    assert "edits_test_config:pyproject.toml" in score(item(pyproject)).details["flags"]
    harmless = diff("setup.cfg", None, "[metadata]\nname = calc\n")
    assert score(item(GOLD + harmless)).reward == 1.0


def test_sys_exit_zero_at_import_is_not_a_pass(score: Score) -> None:
    result = score(item(on_import("import sys\nsys.exit(0)")))
    assert_not_rewarded(result)


def test_os_exit_zero_in_a_test_is_not_a_pass(score: Score) -> None:
    result = score(item(calc_change("return a * b + 1", "import os\n    os._exit(0)")))
    assert_not_rewarded(result)
    assert result.details["not_passed"][FAIL_TO_PASS[0]] == "missing"


def test_os_exit_zero_at_import_is_not_a_pass(score: Score) -> None:
    assert_not_rewarded(score(item(on_import("import os\nos._exit(0)"))))


def test_monkeypatching_pytest_reports_from_the_source_is_caught_by_the_canary(score: Score) -> None:
    patch_reports = (
        "import _pytest.reports as _r\n"
        "_make = _r.TestReport.from_item_and_call.__func__\n"
        "def _passed(cls, item, call):\n"
        "    report = _make(cls, item, call)\n"
        "    report.outcome, report.longrepr = 'passed', None\n"
        "    return report\n"
        "_r.TestReport.from_item_and_call = classmethod(_passed)"
    )
    result = score(item(on_import(patch_reports)))
    assert_not_rewarded(result)
    assert "canary_passed" in result.details["flags"]


def test_lines_written_to_the_report_pipe_are_detected(score: Score) -> None:
    forge = (
        "import json, os\n"
        "for n in ('tests/test_calc.py::test_mul',):\n"
        "    rec = {'test': n, 'phases': {'setup': 'passed', 'call': 'passed', 'teardown': 'passed'}}\n"
        "    os.write(3, ('0' * 64 + ' ' + json.dumps(rec) + '\\n').encode())"
    )
    result = score(item(on_import(forge)))
    assert_not_rewarded(result)
    assert "report_forged" in result.details["flags"]


def test_a_module_shadowing_pytest_or_the_stdlib_is_not_loaded_first(score: Score) -> None:
    shadow = "import os\nos._exit(0)\n"
    change = GOLD + diff("pytest.py", None, shadow) + diff("json.py", None, shadow)
    change += diff("_pytest/__init__.py", None, shadow)
    result = score(item(change))
    assert result.status is Status.OK and result.reward == 1.0, result


def test_a_plugin_entry_point_in_the_change_is_not_autoloaded(score: Score) -> None:
    plugin = "def pytest_configure(config):\n    import os\n    os._exit(0)\n"
    entry = "[pytest11]\nevil = evil_plugin\n"
    change = GOLD + diff("evil_plugin.py", None, plugin)
    change += diff("evil-1.0.dist-info/entry_points.txt", None, entry)
    change += diff("evil-1.0.dist-info/METADATA", None, "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n")
    assert score(item(change)).reward == 1.0


@pytest.mark.parametrize(
    "path",
    ["../outside.py", "/tmp/assay-repo-absolute.py", ".git/hooks/post-checkout", "calc/../../escape.py"],
)
def test_a_diff_that_writes_outside_the_working_copy_is_refused(score: Score, path: str, repos: Path) -> None:
    result = score(item(diff(path, None, "x = 1\n")))
    assert_not_rewarded(result)
    assert "does not apply" in result.reason
    assert not Path("/tmp/assay-repo-absolute.py").exists()
    assert sorted(p.name for p in repos.iterdir()) == ["calc"]


def test_a_diff_through_a_symlink_in_the_repository_is_refused(
    score: Score, repos: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repos / "calc" / "link")
    git(repos / "calc", "add", "link")  # in the base tree, so in the working copy
    git(repos / "calc", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "link")
    result = score(item(diff("link/planted.py", None, "x = 1\n")))
    assert_not_rewarded(result)
    assert "symbolic link" in result.reason and not list(outside.iterdir())


def test_a_diff_that_creates_a_symlink_is_refused(score: Score) -> None:
    link = "diff --git a/ln b/ln\nnew file mode 120000\n--- /dev/null\n+++ b/ln\n@@ -0,0 +1 @@\n"
    link += "+/etc/passwd\n\\ No newline at end of file\n"
    result = score(item(link))
    assert_not_rewarded(result)
    assert "symbolic link" in result.reason


def test_the_tests_have_no_network(score: Score) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        probe = (
            "import socket\n"
            "def _online():\n"
            "    try:\n"
            f"        socket.create_connection(('127.0.0.1', {port}), timeout=2).close()\n"
            "        return True\n"
            "    except OSError:\n"
            "        return False"
        )
        change = diff(
            "calc/__init__.py",
            CALC,
            CALC.replace(ON_IMPORT, f"{probe}\n\n\n{ON_IMPORT}").replace(
                "return a * b + 1", "return a * b + (1 if _online() else 0)"
            ),
        )
        # Rewarded only when the host's loopback server cannot be reached from the tests.
        assert score(item(change)).reward == 1.0


def test_concurrent_items_never_see_each_other_s_working_copies(score: Score) -> None:
    """Each item's code plants its own marker and looks for the other's: in /repo, /tmp and all of /
    it can reach. It returns the right product only when it sees no marker but its own."""

    def change(me: str, other: str) -> str:
        look = (
            "import os\n"
            f"open('/repo/{me}', 'w').write('x')\n"
            f"open('/tmp/{me}', 'w').write('x')\n"
            "def _seen():\n"
            "    found = False\n"
            "    for top, dirs, files in os.walk('/', onerror=lambda e: None):\n"
            "        skip = ('/proc', '/sys', '/usr', '/dev')\n"
            "        dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]\n"
            f"        found = found or '{other}' in files\n"
            "    return found"
        )
        text = CALC.replace(ON_IMPORT, f"{look}\n\n\n{ON_IMPORT}")
        return diff("calc/__init__.py", CALC, text.replace("return a * b + 1", "return a * b + _seen()"))

    start = threading.Barrier(2)

    def run(pair: tuple[str, str]) -> float | None:
        start.wait(timeout=60)
        return score(item(change(*pair))).reward

    pairs = [("MARK_A", "MARK_B"), ("MARK_B", "MARK_A")] * 2
    with ThreadPoolExecutor(2) as pool:
        rewards = list(pool.map(run, pairs))
    assert rewards == [1.0, 1.0, 1.0, 1.0]


def test_a_change_that_hangs_is_stopped_at_its_limit_and_not_rewarded(score: Score) -> None:
    hang = calc_change("return a * b + 1", "while True:\n        pass")
    result = score(item(hang, options={"time_limit_s": 2}))
    assert_not_rewarded(result)
    assert "limit" in result.reason and result.details["not_passed"][FAIL_TO_PASS[0]] == "missing"
