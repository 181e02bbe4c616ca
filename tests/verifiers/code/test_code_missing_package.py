"""A package the runtime should offer but this server lacks is our failure (`error`, with the fix named);
a module no runtime offers is the program's (`ok`, 0), so a policy cannot import its way out of a 0."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from assay_testing import code_scorer
from assay_testing import score_program as score

from assay.sandbox.runtime import lacking_runtime_package, runtime_packages
from assay.types import Status
from assay.verifiers.code import CodeScorer

ADD = [{"stdin": "1 2\n", "stdout": "3"}, {"stdin": "5 7\n", "stdout": "12"}]
WRONG = "a, b = map(int, input().split())\nprint(a - b)\n"


def _scorer(*dists: str) -> Iterator[CodeScorer]:
    """A scorer whose package prefix's metadata claims `dists` (what `prefix_packages` reads); the prefix
    lies outside pytest's private tmp tree, which a slot's own uid cannot enter."""
    root = Path(tempfile.mkdtemp(prefix="assay-prefix-"))
    try:
        root.chmod(0o755)
        for dist in dists:
            (root / f"{dist}-1.0.dist-info").mkdir()
        yield from code_scorer(time_limit_s=2, memory_mb=256, python_prefix=root)
    finally:
        shutil.rmtree(root)


@pytest.fixture(scope="module")
def bare() -> Iterator[CodeScorer]:
    """A server whose runtime holds nothing: the standard library only."""
    yield from _scorer()


@pytest.fixture(scope="module")
def claims_numpy() -> Iterator[CodeScorer]:
    """A server whose runtime says it holds numpy (only its metadata: importing it still fails)."""
    yield from _scorer("numpy")


def test_a_runtime_package_the_server_lacks_is_an_error_naming_the_fix(bare: CodeScorer) -> None:
    result = score(
        bare, "import numpy as np\na, b = map(int, input().split())\nprint(int(np.add(a, b)))\n", ADD
    )
    assert (result.status, result.reward) == (Status.ERROR, None)
    assert "numpy" in result.reason and "ASSAY_CODE__PYTHON_PREFIX" in result.reason
    assert result.details["missing_module"] == "numpy"


# A wrong program that imports something missing on purpose, in every way a policy could write it.
_MADE_UP = ("numpy_solver_pro", "fastmath", "leetcode_utils")
_IMPORTS = (
    "import {m}",
    "from {m} import solve",
    "__import__('{m}')",
    "import importlib\nimportlib.import_module('{m}')",
)


@pytest.mark.parametrize("module", _MADE_UP)
@pytest.mark.parametrize("form", _IMPORTS)
def test_importing_a_made_up_module_on_purpose_keeps_the_zero(
    bare: CodeScorer, form: str, module: str
) -> None:
    result = score(bare, form.format(m=module) + "\n" + WRONG, ADD)
    assert (result.status, result.reward) == (Status.OK, 0.0)
    assert result.details["missing_module"] == module


def test_failing_an_import_only_when_a_test_fails_keeps_the_zero(bare: CodeScorer) -> None:
    program = "a, b = map(int, input().split())\nif a == 5:\n    import totally_real_pkg\nprint(a + b)\n"
    result = score(bare, program, ADD)
    assert (result.status, result.reward) == (Status.OK, 0.5)


def test_a_forged_missing_line_for_a_held_package_keeps_the_zero(claims_numpy: CodeScorer) -> None:
    forged = (
        "import sys\nsys.stderr.write(\"ModuleNotFoundError: No module named 'numpy'\\n\")\nsys.exit(1)\n"
    )
    for program in (forged, "import numpy.secret_submodule\n" + WRONG):
        result = score(claims_numpy, program, ADD)
        assert (result.status, result.reward) == (Status.OK, 0.0), program


def test_the_runtime_list_is_read_from_the_packages_file() -> None:
    assert {"numpy", "scipy", "pandas", "sympy", "networkx", "sortedcontainers"} <= runtime_packages()
    assert lacking_runtime_package("numpy", []) == "numpy"
    assert lacking_runtime_package("numpy", ["numpy"]) is None
    assert lacking_runtime_package("torch", []) is None  # no runtime of ours offers it
    assert lacking_runtime_package(None, []) is None
