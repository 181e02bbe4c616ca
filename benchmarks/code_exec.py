"""Sandboxed code execution: Assay's warm slots vs a fresh process per test, in the same run.

    .venv/bin/python benchmarks/code_exec.py [--submissions N] [--workers W]

Three ways to run the same Python tests, each with W concurrent callers:
- assay:      the code scorer (full isolation: bwrap slot, seccomp, cgroups, rlimits, own uid), warm
              interpreter forking per test;
- bwrap/test: a fresh bubblewrap sandbox (namespaces, seccomp, cap-drop, tmpfs) and interpreter per test,
              the way a sandbox-per-request service works;
- subprocess: plain `subprocess.run([python3, "-c", code])` per test, no isolation at all.

Workloads: a trivial program with one test per submission, and submissions of 10 tests. Prints tests/s,
p50/p99 latency per submission, and ratios against the plain subprocess baseline. Then the call/assert
shapes (10 asserts, 10 calls, one HumanEval-style check of 8 asserts), Assay only, each as a ratio to the
first workload's subprocess rate in the same run. Target (issue 4):
assay >= 5x the plain subprocess throughput.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from assay.sandbox import seccomp
from assay.sandbox.bwrap import SANDBOX_PYTHON, find_bwrap
from assay.settings import CodeSettings, Settings
from assay.types import Item
from assay.verifiers.code import CodeOptions, CodeScorer

TRIVIAL = "print(int(input()) * 2)"
TESTS_1 = [{"stdin": "21\n", "stdout": "42"}]
TESTS_10 = [{"stdin": f"{i}\n", "stdout": str(2 * i)} for i in range(10)]
# The call/assert shapes (HumanEval/MBPP), Assay only: the per-test baselines speak stdin/stdout.
DOUBLE = "def double(x):\n    return x * 2\n"
ASSERTS_10 = [{"assert": f"assert double({i}) == {2 * i}"} for i in range(10)]
CALLS_10 = [{"fn_name": "double", "args": [i], "expected": 2 * i} for i in range(10)]
CHECK_1 = [
    {
        "check": "def check(candidate):\n"
        + "".join(f"    assert candidate({i}) == {2 * i}\n" for i in range(8)),
        "entry_point": "double",
    }
]


def bwrap_argv(bwrap: str, fd: int, code: str) -> list[str]:
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    args += ["--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64"]
    args += ["--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    args += ["--seccomp", str(fd), "--chdir", "/tmp", SANDBOX_PYTHON, "-I", "-c", code]
    return args


def per_test_runner(kind: str) -> Callable[[str, list[dict[str, str]]], bool]:
    bwrap = find_bwrap()

    def run(code: str, tests: list[dict[str, str]]) -> bool:
        ok = True
        for test in tests:
            if kind == "subprocess":
                argv, fds = [SANDBOX_PYTHON, "-I", "-c", code], ()
            else:
                fd = seccomp.seccomp_fd()
                argv, fds = bwrap_argv(bwrap, fd, code), (fd,)
            try:
                done = subprocess.run(
                    argv, input=test["stdin"].encode(), capture_output=True, timeout=30, env={}, pass_fds=fds
                )
            finally:
                for fd in fds:
                    os.close(fd)
            ok = ok and done.stdout.decode().split() == test["stdout"].split()
        return ok

    return run


def measure(
    runners: dict[str, Callable[[str, list[dict[str, str]]], bool]],
    tests: list[Any],
    n: int,
    workers: int,
    rounds: int,
    program: str = TRIVIAL,
) -> dict[str, dict[str, float]]:
    """Interleave the runners in rounds so that load from other processes hits them alike."""
    latencies: dict[str, list[float]] = {name: [] for name in runners}
    elapsed = dict.fromkeys(runners, 0.0)
    for submit in runners.values():  # warm-up: page cache, and every one of assay's `workers` slots
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda _, submit=submit: submit(program, tests), range(workers)))
    per_round = max(1, n // rounds)
    for _ in range(rounds):
        for name, submit in runners.items():

            def one(_: int, name: str = name, submit: Any = submit) -> bool:
                started = time.perf_counter()
                ok = bool(submit(program, tests))
                latencies[name].append(time.perf_counter() - started)
                return ok

            started = time.perf_counter()
            with ThreadPoolExecutor(workers) as pool:
                results = list(pool.map(one, range(per_round)))
            elapsed[name] += time.perf_counter() - started
            assert all(results), f"{name}: some submissions failed"
    rows = {}
    for name, lat in latencies.items():
        lat.sort()
        rows[name] = {
            "tests_per_s": len(lat) * len(tests) / elapsed[name],
            "p50_ms": statistics.median(lat) * 1000,
            "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000,
        }
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per workload")
    args = parser.parse_args()
    scorer = CodeScorer(Settings(code=CodeSettings(slots=args.workers)))
    options = CodeOptions()

    def assay(code: str, tests: list[dict[str, str]]) -> bool:
        item = Item(task="code", response=code, tests=tests)
        result = scorer.score(item, options)
        if result.reward != 1.0:
            print("assay failed:", result.status.value, result.reason, result.details.get("tests", [])[:3])
        return result.reward == 1.0

    runners = {
        "assay": assay,
        "bwrap/test": per_test_runner("bwrap"),
        "subprocess": per_test_runner("subprocess"),
    }
    trivial_base = 0.0  # the plain-subprocess rate of the first workload: the assay-only rows' baseline
    try:
        for label, tests, n in (
            ("trivial, 1 test", TESTS_1, args.submissions),
            ("10 tests", TESTS_10, max(4, args.submissions // 10)),
        ):
            print(f"\n== {label} per submission, {n} submissions, {args.workers} concurrent ==")
            rows = measure(runners, tests, n, args.workers, args.rounds)
            base = rows["subprocess"]["tests_per_s"]
            trivial_base = trivial_base or base
            print(f"{'runner':<12} {'tests/s':>9} {'p50 ms':>9} {'p99 ms':>9} {'vs subprocess':>14}")
            for name, row in rows.items():
                ratio = row["tests_per_s"] / base
                cells = f"{row['tests_per_s']:>9.1f} {row['p50_ms']:>9.1f} {row['p99_ms']:>9.1f}"
                print(f"{name:<12} {cells} {ratio:>13.1f}x")
        assay_only = {"assay": assay}
        for label, tests, n in (
            ("10 assert tests", ASSERTS_10, max(4, args.submissions // 10)),
            ("10 call tests", CALLS_10, max(4, args.submissions // 10)),
            ("1 check(candidate) test, 8 asserts", CHECK_1, args.submissions),
        ):
            print(f"\n== {label} per submission, {n} submissions, {args.workers} concurrent, assay only ==")
            row = measure(assay_only, tests, n, args.workers, args.rounds, DOUBLE)["assay"]
            ratio = row["tests_per_s"] / trivial_base
            print(
                f"assay tests/s {row['tests_per_s']:.1f}  p50 {row['p50_ms']:.1f} ms"
                f"  p99 {row['p99_ms']:.1f} ms; {ratio:.1f}x the first workload's subprocess tests/s"
            )
    finally:
        scorer.close()


if __name__ == "__main__":
    main()
