"""A repository's own dependency environment (issue 37 item 4): what is read from its metadata, the
content-hash key, building once under a lock, and a failed build as `error` with pip's reason."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from repo_support import CALC, GOLD, TESTS, diff, item, make_repo

from assay.sandbox import runtime
from assay.settings import RepoSettings, Settings
from assay.types import Item, Status
from assay.verifiers.repo import RepoOptions, RepoScorer
from assay.verifiers.repo import dependencies as deps
from assay.verifiers.repo.dependencies import (
    EnvironmentFailed,
    Environments,
    Requirements,
    installed,
    read_requirements,
)
from assay.verifiers.repo.run import TestRun, repo_paths


@pytest.fixture
def cache() -> Iterator[Path]:
    """An environment cache the sandbox's uid can enter (pytest's tmp_path is private to root)."""
    holder = Path(tempfile.mkdtemp(prefix="assay-test-envs-"))
    holder.chmod(0o755)
    yield holder / "envs"
    shutil.rmtree(holder, ignore_errors=True)


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


PYPROJECT = """
[project]
name = "Enc_Tools"
version = "1.0"
dependencies = ["webencodings>=0.5", "attrs ; python_version >= '3.8'"]

[project.optional-dependencies]
yaml = ["pyyaml"]
docs = ["sphinx"]
tests = ["enc-tools[yaml]", "hypothesis", "mylib @ https://example.com/mylib.tar.gz"]

[dependency-groups]
lint = ["ruff"]
base = ["pytest-mock"]
test = ["coverage", {include-group = "base"}]
"""


def test_pyproject_dependencies_test_extras_and_groups_are_read(tmp_path: Path) -> None:
    found = read_requirements(tree(tmp_path, {"pyproject.toml": PYPROJECT}))
    assert found.lines == (
        "attrs ; python_version >= '3.8'",
        "coverage",
        "hypothesis",
        "pytest-mock",
        "pyyaml",  # the test extra names the project's own `yaml` extra: its lines, never the project
        "webencodings>=0.5",
    )
    assert "pyproject.toml [tests]" in found.sources


def test_setup_cfg_and_a_static_setup_py_are_read_and_setup_py_never_runs(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    setup_py = f"""
import pathlib
from setuptools import setup
pathlib.Path({str(ran)!r}).write_text("setup.py was run")
REQUIRES = ["six>=1.0"]
setup(name="calc", install_requires=REQUIRES, extras_require={{"test": ["pytest-timeout"]}},
      tests_require=computed())
"""
    setup_cfg = (
        "[options]\ninstall_requires =\n    toolz\n[options.extras_require]\ntesting = mock\ndev = black\n"
    )
    found = read_requirements(tree(tmp_path / "p", {"setup.py": setup_py, "setup.cfg": setup_cfg}))
    assert found.lines == ("mock", "pytest-timeout", "six>=1.0", "toolz")
    assert not ran.exists()


def test_requirement_files_follow_includes_inside_the_tree_and_drop_options(tmp_path: Path) -> None:
    files = {
        "requirements.txt": "-e .\n--index-url https://elsewhere/simple\nrequests==2.0  # pinned\n.\n",
        "requirements/test.txt": "-r common.txt\n-r ../../outside.txt\npytest-xdist\n",
        "requirements/common.txt": "idna\n",
        "../outside.txt": "not-read\n",
    }
    found = read_requirements(tree(tmp_path / "p", files))
    assert found.lines == ("idna", "pytest-xdist", "requests==2.0")


def test_a_tree_without_metadata_needs_no_environment(tmp_path: Path, cache: Path) -> None:
    found = read_requirements(
        tree(tmp_path, {"calc/__init__.py": "", "setup.py": "from setuptools import setup\n"})
    )
    assert found.lines == ()
    assert Environments(cache, python="3.11").ensure(found) is None


def test_unparseable_metadata_is_a_failure_with_the_file_named(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentFailed, match=r"pyproject\.toml cannot be parsed"):
        read_requirements(tree(tmp_path, {"pyproject.toml": "[project\nname = 1"}))


def test_the_key_follows_the_requirements_read_not_the_files(tmp_path: Path) -> None:
    one = read_requirements(tree(tmp_path / "a", {"pyproject.toml": PYPROJECT}))
    bumped = PYPROJECT.replace('version = "1.0"', 'version = "2.0"') + "\n[tool.other]\nx = 1\n"
    two = read_requirements(tree(tmp_path / "b", {"pyproject.toml": bumped}))
    assert one.key("3.11") == two.key("3.11")
    assert one.key("3.11") != one.key("3.12")
    assert one.key("3.11") != Requirements(one.lines[1:], one.sources).key("3.11")


def _fake_pip(monkeypatch: pytest.MonkeyPatch, count: Path, script: str) -> None:
    """pip replaced by a Python snippet run with the target directory as argv[1], each run adding an x
    to the file `count`."""
    counted = (
        "import pathlib, sys\n"
        f"c = pathlib.Path({str(count)!r}); c.write_text(c.read_text() + 'x' if c.exists() else 'x')\n"
    ) + script

    def command(target: Path, python: str, requirements: Path) -> list[str]:
        return [sys.executable, "-c", counted, str(target)]

    monkeypatch.setattr(deps, "build_command", command)


def test_an_environment_is_built_once_and_shared_by_concurrent_items(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = tmp_path / "builds"
    script = "dep = pathlib.Path(sys.argv[1]) / 'dep'; dep.mkdir(); (dep / '__init__.py').touch()\n"
    _fake_pip(monkeypatch, count, script)
    envs = Environments(cache, python="3.11")
    wanted = Requirements(("dep==1",), ("requirements.txt",))
    results: list[Path | None] = []
    threads = [threading.Thread(target=lambda: results.append(envs.ensure(wanted))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert count.read_text() == "x"
    assert len(set(results)) == 1 and results[0] is not None
    assert (results[0] / "dep" / "__init__.py").is_file()
    assert Environments(cache, python="3.11").ensure(wanted) == results[0]  # another process
    assert count.read_text() == "x"
    assert not list(cache.glob("*.partial"))


def test_a_failed_build_says_why_once_and_leaves_nothing(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = tmp_path / "builds"
    script = "sys.stderr.write('ERROR: No matching distribution found for nosuchpkg==9')\nsys.exit(1)\n"
    _fake_pip(monkeypatch, count, script)
    envs = Environments(cache, python="3.11")
    wanted = Requirements(("nosuchpkg==9",), ("setup.py install_requires",))
    for _ in range(2):
        with pytest.raises(EnvironmentFailed, match="No matching distribution found for nosuchpkg==9"):
            envs.ensure(wanted)
    assert count.read_text() == "x"  # remembered: one pip run per key in a process
    assert [p.suffix for p in cache.iterdir()] == [".lock"]


def test_a_repo_item_whose_environment_cannot_be_built_is_an_error_not_a_zero(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = "sys.stderr.write('ERROR: Could not find a version'); sys.exit(1)"
    _fake_pip(monkeypatch, tmp_path / "builds", script)
    repos = tmp_path / "repos"
    make_repo(
        repos,
        files={"calc/__init__.py": CALC, "tests/test_calc.py": TESTS, "requirements.txt": "nosuchpkg\n"},
    )
    settings = Settings(repo=RepoSettings(repos=repos, env_cache=cache))
    for response in (GOLD, ""):
        result = RepoScorer(settings).score(Item.model_validate(item(response)), RepoOptions())
        assert result.status is Status.ERROR and result.reward is None
        assert "Could not find a version" in result.reason


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root server drops the sandbox to another uid")
def test_a_cache_the_sandbox_cannot_enter_is_refused_before_building(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    with pytest.raises(EnvironmentFailed, match="cannot enter"):
        Environments(tmp_path / "envs", python="3.11").ensure(Requirements(("dep",), ("requirements.txt",)))
    assert not (tmp_path / "envs").exists()


def test_the_copy_s_code_comes_before_its_dependencies_on_the_path() -> None:
    test = TestRun(files=("t.py",), wanted=(), python_path=("src",))
    assert repo_paths(test, True) == ["/repo/src", "/repo", runtime.ENV_MOUNT]
    assert runtime.ENV_MOUNT not in repo_paths(test)


ENC = '''import webencodings


def label(name):
    """The canonical name of an encoding label."""
    return webencodings.lookup(name).name.upper()
'''
ENC_TESTS = """from enc import label


def test_latin1_is_windows_1252():
    assert label("latin1") == "windows-1252"


def test_utf8():
    assert label("utf8").lower() == "utf-8"
"""


@pytest.mark.slow
def test_a_project_needing_a_registry_package_is_judged_in_its_own_environment(
    tmp_path: Path, cache: Path, prefix: Path
) -> None:
    """webencodings is not in the sandbox runtime: the environment built from pyproject.toml brings it,
    once; the second item (and a second scorer, as another server process would be) reuses it."""
    pyproject = '[project]\nname = "enc"\nversion = "0"\ndependencies = ["webencodings==0.5.1"]\n'
    files = {"pyproject.toml": pyproject, "enc/__init__.py": ENC, "tests/test_enc.py": ENC_TESTS}
    make_repo(tmp_path / "repos", "enc", files)
    settings = Settings(repo=RepoSettings(repos=tmp_path / "repos", python_prefix=prefix, env_cache=cache))
    fix = diff("enc/__init__.py", ENC, ENC.replace(".name.upper()", ".name"))
    raw = {
        "task": "repo",
        "repo": "enc",
        "FAIL_TO_PASS": ["tests/test_enc.py::test_latin1_is_windows_1252"],
        "PASS_TO_PASS": ["tests/test_enc.py::test_utf8"],
    }
    gold = RepoScorer(settings).score(Item.model_validate({**raw, "response": fix}), RepoOptions())
    assert gold.status is Status.OK and gold.reward == 1.0, gold
    (built,) = [p for p in cache.iterdir() if p.is_dir()]
    stamp = (built / deps.MARKER).stat().st_mtime_ns
    bug = RepoScorer(settings).score(Item.model_validate({**raw, "response": ""}), RepoOptions())
    assert bug.status is Status.OK and bug.reward == 0.0, bug
    assert bug.details["pass_to_pass"] == {"passed": 1, "total": 1}  # webencodings imported in the sandbox
    assert "WINDOWS-1252" in str(bug.details["failures"])
    assert [p for p in cache.iterdir() if p.is_dir()] == [built]
    assert (built / deps.MARKER).stat().st_mtime_ns == stamp


def test_what_the_package_prefix_holds_is_not_built_again(tmp_path: Path, cache: Path) -> None:
    """The prefix comes first on the sandbox's path: a repository's needs it meets build nothing, so an
    offline server keeps scoring a project that needs only numpy and pytest."""
    prefix = tmp_path / "prefix"
    for info in ("numpy-2.1.0.dist-info", "pytest-8.3.0.dist-info", "typing_extensions-4.12.dist-info"):
        (prefix / info).mkdir(parents=True)
    provided = installed(prefix)
    assert provided == {"numpy", "pytest", "typing-extensions"}
    needs = Requirements(
        ("NumPy>=1.20", "pytest", "Typing.Extensions", "webencodings==0.5"), ("pyproject.toml",)
    )
    assert needs.without(provided).lines == ("webencodings==0.5",)
    met = Requirements(("numpy>=1.20", "pytest[testing]>=7 ; python_version >= '3.8'"), ("setup.cfg",))
    assert Environments(cache, python="3.11").ensure(met.without(provided)) is None
    assert not cache.exists() or not list(cache.iterdir())  # nothing built, no pip run
