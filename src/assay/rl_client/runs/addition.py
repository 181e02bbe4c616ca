"""The demos' task: two-digit addition, every a+b with 0 <= a, b < 100. Its own module so that the demo
and its verbose thinking variant (`think_demo.py`, which `demo.run_demo` hands AdaptThink runs to) both
draw the same problems without importing each other."""

from __future__ import annotations

import random

from assay.rl_client.generate import Problem


def addition_problems(seed: int, dev_size: int = 500) -> tuple[list[Problem], list[Problem]]:
    """All a+b with 0 <= a, b < 100, shuffled by `seed`: (train, dev)."""
    pairs = [(a, b) for a in range(100) for b in range(100)]
    random.Random(seed).shuffle(pairs)
    problems = [Problem(f"{a}+{b}", f"{a:02d}+{b:02d}=", str(a + b)) for a, b in pairs]
    return problems[dev_size:], problems[:dev_size]
