"""benchmarks/prm_gpu.py runs (tiny config, CPU) so the script a GPU machine gets is known to work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "prm_gpu.py"


def test_the_gpu_benchmark_runs_in_smoke_mode_on_cpu() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", str(SCRIPT), "--smoke", "--batch-sizes", "1,3", "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["batch", "ms/batch"])
    rows = [line.split() for line in lines[header + 1 :]]
    assert [row[0] for row in rows] == ["1", "3"]
    for row in rows:
        assert float(row[3]) > 0  # steps/s
        assert float(row[-1]) <= 1e-5  # fp32 on CPU: the batch does not change the first item's scores
