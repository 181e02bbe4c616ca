"""Settings and command line mistakes end a command with one line (what is wrong, what to do), never a
traceback (issue 31: each of these printed pydantic's or Python's multi-line text)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from assay_testing import free_port, reachable_by_sandboxes

from assay.cli import main


def _one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and "errors.pydantic.dev" not in err, err
    return err


@pytest.fixture
def no_input(tmp_path: Path) -> str:
    path = tmp_path / "items.jsonl"
    path.write_text("")
    return str(path)


def test_a_misspelled_nested_setting_suggests_the_right_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], no_input: str
) -> None:
    monkeypatch.setenv("ASSAY_MATH__DEADLINE", "5")
    err = _one_line(capsys, ["score", no_input])
    expected = 'ASSAY_MATH__DEADLINE is not a setting (did you mean "ASSAY_MATH__DEADLINE_S"?)'
    assert err == f"assay score: {expected}"


def test_a_setting_that_is_not_a_number_names_the_variable_and_its_value(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], no_input: str
) -> None:
    monkeypatch.setenv("ASSAY_WORKERS", "abc")
    err = _one_line(capsys, ["score", no_input])
    assert err.startswith("assay score: ASSAY_WORKERS='abc': Input should be a valid integer")


def test_bench_says_a_bad_setting_in_one_line_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], no_input: str
) -> None:
    monkeypatch.setenv("ASSAY_SQL__QUERY_TIMEOUT", "2")
    err = _one_line(capsys, ["bench", no_input, "--task", "math"])
    assert err.startswith("assay bench: ASSAY_SQL__QUERY_TIMEOUT is not a setting (did you mean")


def test_a_port_out_of_range_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    err = _one_line(capsys, ["serve", "--port", "99999"])  # refused before anything else is said
    assert err == "assay serve: --port=99999: Input should be less than or equal to 65535"


def test_serve_ray_without_ray_installed_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "numpy-2.4.6.dist-info").mkdir()  # a sandbox runtime: `serve` has nothing to note on it
    reachable_by_sandboxes(tmp_path)
    monkeypatch.setenv("ASSAY_CODE__PYTHON_PREFIX", str(tmp_path))
    # Ray hidden as if not installed: an import of it raises ImportError.
    for name in [m for m in sys.modules if m == "ray" or m.startswith("ray.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ray", None)
    err = _one_line(capsys, ["serve", "--ray", "--port", str(free_port())])
    assert err == "assay serve: ray[serve] is not installed; install it with: pip install 'assay[ray]'"


def test_serve_says_at_start_when_sandboxed_python_has_the_standard_library_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no runtime built in the user cache
    for name in [m for m in sys.modules if m == "ray" or m.startswith("ray.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ray", None)  # stop right after the start-up lines
    assert main(["serve", "--ray", "--port", str(free_port())]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("assay serve: sandboxed Python has the standard library only")
    assert "assay sandbox-runtime" in first
