"""The warm runtime runs a Python program as `python3 main.py` would, despite its shortcuts.

The runtime compiles a submission once (in itself, not in each forked test), builds the test's stdio
once, and sets signal dispositions once; these tests pin that a program cannot tell.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox_support import LIMITS

from assay.sandbox import RUNTIME_ERROR, Executor, RunOutcome, TestInput, lookup

Run = Callable[..., RunOutcome]


def test_syntax_error_is_reported_by_the_program(run: Run) -> None:
    outcome = run("print('before')\ndef broken(:\n")
    assert outcome.status == RUNTIME_ERROR
    assert b"SyntaxError" in outcome.stderr and b"main.py" in outcome.stderr
    assert outcome.stdout == b""


def test_compile_warning_reaches_the_program_stderr(run: Run) -> None:
    # A program that warns at compile time is compiled in its own process, which prints the warning.
    outcome = run("x = 1\nprint(x is 1)\n")
    assert outcome.stdout == b"True\n"
    assert b"SyntaxWarning" in outcome.stderr


def test_runtime_future_imports_do_not_leak_into_the_program(run: Run) -> None:
    # The runtime itself uses `from __future__ import annotations`; a program compiled there must not.
    outcome = run("def f(x: Undefined) -> None:\n    pass\n")
    assert outcome.status == RUNTIME_ERROR
    assert b"NameError" in outcome.stderr


def test_stdio_is_a_file_in_and_pipes_out(run: Run) -> None:
    source = "import sys\nprint(sys.stdin.seekable(), sys.stdout.seekable(), sys.stderr.seekable())\n"
    assert run(source).stdout == b"True False False\n"


def test_signals_have_their_default_dispositions(run: Run) -> None:
    source = "import signal\nprint([signal.getsignal(s).name for s in (13, 25, 2)])\n"
    assert run(source).stdout == b"['SIG_DFL', 'SIG_DFL', 'SIG_DFL']\n"


def test_each_submission_runs_its_own_program(executor: Executor) -> None:
    lang = lookup("python")
    assert lang is not None
    for answer in range(4):  # same slots, new sources: nothing compiled for one is run for another
        source = f"print(int(input()) + {answer})"
        tests = [TestInput(stdin=f"{i}\n".encode()) for i in range(3)]
        execution = executor.execute(lang, source, tests, LIMITS)
        assert execution.runs is not None
        assert [run.stdout for run in execution.runs] == [f"{i + answer}\n".encode() for i in range(3)]


def test_every_test_of_a_submission_starts_fresh(executor: Executor) -> None:
    # One compile, one fork per test: module state set by one test is not seen by the next.
    lang = lookup("python")
    assert lang is not None
    source = "import sys\nsys.modules.setdefault('seen', [])\nprint(len(sys.modules['seen']))\n"
    source += "sys.modules['seen'].append(1)\n"
    execution = executor.execute(lang, source, [TestInput()] * 3, LIMITS)
    assert execution.runs is not None
    assert [run.stdout for run in execution.runs] == [b"0\n"] * 3
