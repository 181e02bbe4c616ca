"""The sandbox's Python runtime: our package prefix is importable, the host's packages are not."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from assay_testing import bwrap_works
from sandbox_support import LIMITS, SETTINGS

from assay.sandbox import Executor, Limits, RunOutcome, TestInput, create_executor, lookup
from assay.sandbox.runtime import offered, prefix_packages

PREFIX = Path(__file__).resolve().parents[2] / ".sandbox-runtime" / "python"
# Importing scipy or pandas takes about a second of wall time on a loaded 2-core machine.
HEAVY = Limits(time_s=10.0, memory_mb=512, wall_s=60.0)


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    if not PREFIX.is_dir():
        pytest.fail(f"{PREFIX} is missing: build it with `make sandbox-runtime` (make test does)")
    ex = create_executor(SETTINGS.model_copy(update={"python_prefix": PREFIX, "slots": 1}))
    yield ex
    ex.pool.close()


def run(executor: Executor, source: str, limits: Limits = LIMITS) -> RunOutcome:
    python = lookup("python")
    assert python is not None
    execution = executor.execute(python, source, [TestInput()], limits)
    assert execution.runs
    return execution.runs[0]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import numpy as np\nprint(int(np.arange(10).reshape(2, 5).sum(axis=0)[4]))", b"13"),
        (
            "from scipy.optimize import brentq\nprint(round(brentq(lambda x: x * x - 2, 0, 2), 6))",
            b"1.414214",
        ),
        ("import pandas as pd\nprint(pd.DataFrame({'a': [1, 2, 3]}).a.sum())", b"6"),
        ("import sympy\nprint(sympy.factor('x**2 - 1'))", b"(x - 1)*(x + 1)"),
        ("import networkx as nx\nprint(nx.shortest_path_length(nx.path_graph(5), 0, 4))", b"4"),
        ("from sortedcontainers import SortedList\nprint(list(SortedList([3, 1, 2])))", b"[1, 2, 3]"),
    ],
)
def test_prefix_packages_import_and_work(executor: Executor, source: str, expected: bytes) -> None:
    out = run(executor, source, HEAVY)
    assert out.status == "passed", out.stderr
    assert out.stdout.strip() == expected


def test_host_dist_packages_are_not_importable(executor: Executor) -> None:
    assert Path("/usr/lib/python3/dist-packages/yaml").is_dir()  # the host has it ...
    out = run(executor, "import yaml")
    assert out.status == "runtime_error"
    assert b"No module named 'yaml'" in out.stderr  # ... the sandbox does not


def test_host_dist_packages_stay_hidden_when_put_on_the_path(executor: Executor) -> None:
    source = (
        "import os, sys\nsys.path.append('/usr/lib/python3/dist-packages')\n"
        "print(os.listdir('/usr/lib/python3/dist-packages'))\nimport yaml\n"
    )
    out = run(executor, source)
    assert out.stdout == b"[]\n"
    assert b"No module named 'yaml'" in out.stderr


def test_prefix_and_masks_are_read_only(executor: Executor) -> None:
    source = (
        "import errno\nfor d in ('/opt/assay/python', '/usr/lib/python3/dist-packages', '/opt/assay'):\n"
        "    try:\n        open(d + '/evil.py', 'w')\n    except OSError as e:\n"
        "        print(errno.errorcode[e.errno])\n"
    )
    out = run(executor, source)
    assert out.stdout.split() == [b"EROFS"] * 3


def test_command_line_names_no_host_path(executor: Executor) -> None:
    out = run(executor, "print(open('/proc/1/cmdline', 'rb').read().decode())")
    assert out.status == "passed"
    assert str(PREFIX) not in out.stdout.decode()
    assert "/work" not in out.stdout.decode() and "import " not in out.stdout.decode()
    runtime = run(executor, "print(open('/proc/2/cmdline', 'rb').read().split(b'\\0'))")
    assert runtime.stdout.strip() == b"[b'/usr/bin/python3', b'-I', b'-S', b'/opt/assay/runner.py', b'']"


def test_offered_lists_the_prefix_packages() -> None:
    packages = prefix_packages(str(PREFIX))
    assert {"numpy", "scipy", "pandas", "sympy", "networkx", "sortedcontainers"} <= set(packages)
    python = offered(str(PREFIX))["python"]
    assert python["packages"] == packages and python["version"].startswith("Python 3")
    assert prefix_packages(os.devnull) == {}
