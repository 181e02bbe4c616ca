"""Run one submission (a program and its tests) in one slot: compile once, then one fork per test.

Compiled artefacts are cached on the host by a hash of language and source. They are read back from the
sandbox right after the compiler ran (before any user code), so a cached binary is the compiler's own
output, and a later submission with the same source writes it into its slot instead of compiling. A
slot's /tmp is wiped after every submission, so nothing one program leaves behind reaches the next.

Expected outputs never pass through here: the caller compares each test's output outside the sandbox
(`on_result`), and can stop after the first failure.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

from assay.sandbox.base import Limits, RunOutcome, Slot
from assay.sandbox.languages import BUILD_DIR, RUN_DIR, Language
from assay.sandbox.pool import SlotPool

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}


@dataclass(frozen=True)
class TestInput:
    """What one test feeds the program; never what it expects back."""

    __test__ = False  # not a pytest test class, despite the name

    stdin: bytes = b""
    fn_name: str | None = None  # function-call test (Python)
    args: tuple[Any, ...] = ()
    assert_code: str | None = None  # assert-style test (Python)
    nonce: str = ""


@dataclass(frozen=True)
class Program:
    """One program to compile and run on one input (`/run_code`): the language by name, wall-clock limits
    in seconds, memory in MiB (None: the server's default). Plain data, so it travels to a Ray replica."""

    language: str
    source: str
    stdin: bytes = b""
    wall_s: float = 10.0
    memory_mb: int | None = None
    compile_wall_s: float | None = None


@dataclass
class Execution:
    compile: RunOutcome | None = None
    compile_error: str | None = None
    runs: list[RunOutcome] | None = None
    cached_build: bool = False


class Executor:
    def __init__(self, pool: SlotPool, compile_limits: Limits) -> None:
        self.pool = pool
        self.compile_limits = compile_limits
        # source hash -> ("ok", artefacts) or ("error", message), shared by the pool's threads
        self.cache: LRUCache[str, tuple[str, Any]] = LRUCache(maxsize=256)
        self._cache_lock = threading.Lock()

    def execute(
        self,
        language: Language,
        source: str,
        tests: Sequence[TestInput],
        limits: Limits,
        on_result: Callable[[int, RunOutcome], bool] | None = None,
        compile_limits: Limits | None = None,
    ) -> Execution:
        """Compile (or reuse a build), then run the tests in order until `on_result` returns False."""
        execution = Execution(runs=[])
        with self.pool.slot() as slot:
            needs_files = language.compiled or language.name != "python"
            if needs_files and not self._prepare(slot, language, source, execution, compile_limits):
                return execution
            address_space = limits.address_space and language.address_space
            limits = Limits(**{**limits.__dict__, "address_space": address_space})
            for index, test in enumerate(tests):
                request = self._request(language, source, test, limits)
                if index == len(tests) - 1:
                    request["cleanup"] = "/tmp"  # the last test wipes the slot: one round trip less
                outcome = slot.run(request, test.stdin, limits)
                assert execution.runs is not None
                execution.runs.append(outcome)
                if on_result is not None and not on_result(index, outcome):
                    break
        return execution

    def _prepare(
        self, slot: Slot, language: Language, source: str, execution: Execution, limits: Limits | None
    ) -> bool:
        """Put the program into the slot's build dir, compiling it unless cached. False: compile error."""
        filename = language.source_file(source)
        slot.write_files({f"{BUILD_DIR}/{filename}": source.encode()})
        if not language.compiled:
            return True
        key = hashlib.sha256(f"{language.name}\0{source}".encode()).hexdigest()
        with self._cache_lock:
            cached = self.cache.get(key)
        if cached is not None:
            execution.cached_build = True
            kind, payload = cached
            if kind == "error":
                execution.compile_error = payload
                return False
            slot.write_files({f"{BUILD_DIR}/{n}": data for n, data in payload.items()}, mode=0o755)
            return True
        env = {**ENV, **dict(language.compile_env)}
        request = {"argv": language.compile_command(source), "env": env, "cwd": BUILD_DIR}
        outcome = slot.run(request, b"", limits or self.compile_limits, collect=BUILD_DIR)
        execution.compile = outcome
        if outcome.exit_code != 0:
            message = (outcome.stderr or outcome.stdout).decode("utf-8", "replace")[-4000:]
            if outcome.killed or outcome.oom:
                message = f"compiler stopped ({outcome.status}): {message}"
            execution.compile_error = message or f"compiler exited with {outcome.exit_code}"
            if not (outcome.killed or outcome.oom):  # limits may be transient; errors are not
                with self._cache_lock:
                    self.cache[key] = ("error", execution.compile_error)
            return False
        artefacts = {n: d for n, d in outcome.files.items() if n != filename}
        with self._cache_lock:
            self.cache[key] = ("ok", artefacts)
        return True

    @staticmethod
    def _request(language: Language, source: str, test: TestInput, limits: Limits) -> dict[str, Any]:
        base: dict[str, Any] = {"cwd": RUN_DIR, "cleanup": RUN_DIR}
        if language.name != "python":
            return {**base, "argv": language.run_command(source, limits.memory_mb), "env": ENV}
        python: dict[str, Any] = {"mode": "script", "source": source}
        if test.fn_name is not None:
            python.update(mode="call", fn_name=test.fn_name, args=list(test.args))
        elif test.assert_code is not None:
            python.update(mode="assert", test=test.assert_code, nonce=test.nonce)
        return {**base, "python": python}
