"""Which program the code task takes from a response: a corpus of the shapes models write, end to end.

Every case is a correct solution in a realistic wrapping (several blocks, ```py / ```python3 / untagged /
~~~ fences, indented code, prose between, output blocks, `if __name__` blocks, usage examples after the
solution, a truncated last fence). Each must score 1.0: the wrapping must never cost the policy its
reward. The wrong-solution twin of each case (the solution replaced by a wrong one, the wrapping kept)
must score 0: the picked block really is the one that runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from assay_testing import code_scorer
from hypothesis import given
from hypothesis import strategies as st

from assay.sandbox import lookup
from assay.types import Item
from assay.verifiers.code import CodeScorer
from assay.verifiers.code.blocks import extract_code

GOOD = "def add(a, b):\n    return a + b\n"
BAD = "def add(a, b):\n    return a - b\n"
CALL = [{"fn_name": "add", "args": [2, 3], "expected": 5}, {"fn_name": "add", "args": [1, 1], "expected": 2}]
ASSERT = [{"assert": "assert add(2, 3) == 5\nassert add(-1, 1) == 0"}]
STDIN = [{"stdin": "2 3\n", "stdout": "5\n"}]
STDIN_GOOD = "a, b = map(int, input().split())\nprint(a + b)\n"
STDIN_BAD = "a, b = map(int, input().split())\nprint(a - b)\n"


@dataclass(frozen=True)
class Case:
    note: str
    template: str  # {code} is where the solution goes
    tests: list[dict[str, Any]]
    good: str = GOOD
    bad: str = BAD


CORPUS = [
    Case(
        "solution, then a ```python usage example that calls it",
        "Solution:\n```python\n{code}```\n\nUsage:\n```python\nprint(add(1, 2))  # 3\n```\n",
        CALL,
    ),
    Case(
        "untagged solution, then a ```python usage block",
        "```\n{code}```\nExample:\n```python\nresult = add(4, 5)\nprint(result)\n```\n",
        ASSERT,
    ),
    Case("```py tag", "Here it is.\n```py\n{code}```", CALL),
    Case(
        "```python3 tag, then an untagged output block", "```python3\n{code}```\nOutput:\n```\n5\n```\n", CALL
    ),
    Case(
        "```Python (capitalised) tag and ```text output",
        "```Python\n{code}```\n```text\n>>> add(2, 3)\n5\n```",
        ASSERT,
    ),
    Case("~~~python fences", "~~~python\n{code}~~~\n", CALL),
    Case("```{.python} pandoc-style tag", "```{.python}\n{code}```\n", CALL),
    Case(
        "a first wrong attempt, prose, then the corrected solution",
        "First try:\n```python\ndef add(a, b):\n    return a * b\n```\nThat is wrong for (2, 3). Fixed:\n"
        "```python\n{code}```\n",
        CALL,
    ),
    Case(
        "solution with its own __main__ demo reading stdin (call test: the demo is not run)",
        '```python\n{code}\nif __name__ == "__main__":\n    x, y = map(int, input().split())\n'
        "    print(add(x, y))\n```",
        CALL,
    ),
    Case(
        "solution with a __main__ block calling unittest.main() (assert test: not run)",
        "```python\nimport unittest\n{code}\nclass T(unittest.TestCase):\n    def test(self):\n"
        '        self.assertEqual(add(1, 1), 2)\n\nif __name__ == "__main__":\n    unittest.main()\n```',
        ASSERT,
    ),
    Case(
        "a usage block after the solution, then a ```bash run line",
        "```python\n{code}```\n```python\nassert add(1, 1) == 2\n```\n"
        "Run it with:\n```bash\npython add.py\n```",
        CALL,
    ),
    Case(
        "class Solution method (LeetCode), then a usage block",
        "```python\nclass Solution:\n    def add(self, a, b):\n        return a {op} b\n```\n"
        "```python\nprint(Solution().add(1, 2))\n```",
        CALL,
        good="+",
        bad="-",
    ),
    Case("truncated response: the last fence never closes", "Let me write it.\n```python\n{code}", CALL),
    Case(
        "indented (Markdown) code in prose, no fences",
        "The function adds its arguments:\n\n{indented}\nIt runs in O(1) time.\n",
        CALL,
    ),
    Case("bare program, no prose and no fences", "{code}", CALL),
    Case(
        "helper plus entry point in one block, then a usage block",
        "```python\ndef _check(x):\n    return x\n\n{code}```\n```python\nprint(add(_check(1), 2))\n```",
        ASSERT,
    ),
    Case(
        "stdin program, then an untagged sample session",
        "```python\n{code}```\nSample run:\n```\n$ echo 2 3 | python main.py\n5\n```",
        STDIN,
        good=STDIN_GOOD,
        bad=STDIN_BAD,
    ),
    Case(
        "stdin program with an if __name__ main() guard, then a sample input block",
        '```python\ndef main():\n    {indented_body}\n\nif __name__ == "__main__":\n    main()\n```\n'
        "Input:\n```\n2 3\n```\nOutput:\n```\n5\n```",
        STDIN,
        good=STDIN_GOOD,
        bad=STDIN_BAD,
    ),
    Case(
        "stdin program longer than a later one-line python demo",
        "```python\n{code}```\nOr as a one-liner demo:\n```python\nprint(2 + 3)\n```",
        STDIN,
        good=STDIN_GOOD,
        bad=STDIN_BAD,
    ),
]


def render(case: Case, code: str) -> str:
    indented = "".join(f"    {line}\n" for line in code.splitlines())
    body = "\n    ".join(code.splitlines())
    op = {"+": "+", "-": "-"}.get(code)
    text = case.template.replace("{indented}", indented).replace("{indented_body}", body)
    return text.replace("{op}", op or "").replace("{code}", code if op is None else "")


@pytest.fixture(scope="module")
def scorer() -> Iterator[CodeScorer]:
    yield from code_scorer(slots=1, tmpfs_mb=64, processes=32, memory_mb=256)


def reward(scorer: CodeScorer, response: str, tests: list[dict[str, Any]]) -> float | None:
    item = Item(task="code", response=response, tests=tests)
    result = scorer.score(item, CodeScorer.parse_options({}))
    assert result.status == "ok", result.reason
    return result.reward


@pytest.mark.parametrize("case", CORPUS, ids=[c.note for c in CORPUS])
def test_the_solution_block_is_the_one_that_runs(scorer: CodeScorer, case: Case) -> None:
    assert reward(scorer, render(case, case.good), case.tests) == 1.0
    assert reward(scorer, render(case, case.bad), case.tests) == 0.0


def test_entry_point_beats_length() -> None:
    python = lookup("python")
    assert python is not None
    long_demo = "```python\n" + "x = add(1, 2)\nprint(x)\n" * 10 + "```"
    response = f"```python\n{GOOD}```\n{long_demo}"
    assert extract_code(response, python, ["add"]) == GOOD
    assert extract_code(response, python) != GOOD  # without an entry point: the longest program
    only_calls = f"```python\n{GOOD}```\n```python\n" + "print(add(1, 2))\n" * 10 + "```"
    assert extract_code(only_calls, python) == GOOD  # a block of bare calls is a demo, not a program


def test_output_blocks_are_never_programs() -> None:
    python = lookup("python")
    assert python is not None
    assert extract_code("```python\nprint(5)\n```\n```\n5\n```", python) == "print(5)\n"
    assert extract_code("```python\nx = 1\n```\n```\n[1, 2, 3] and more output\n```", python) == "x = 1\n"


def test_a_closing_fence_glued_to_the_last_line_closes_the_block() -> None:
    python = lookup("python")
    assert python is not None
    response = "```python\ndef add(a, b):\n    return a + b```\nUsage:\n```python\nprint(add(1, 2))```"
    assert extract_code(response, python, ["add"]) == "def add(a, b):\n    return a + b"
    assert extract_code("````python\ns = '```'\n````", python) == "s = '```'\n"  # a longer fence holds ```


def test_other_languages_are_not_taken() -> None:
    python, cpp = lookup("python"), lookup("cpp")
    assert python is not None and cpp is not None
    response = "```cpp\nint main(){return 0;}\n```\n```python\nprint(1)\n```"
    assert extract_code(response, python) == "print(1)\n"
    assert extract_code(response, cpp) == "int main(){return 0;}\n"
    assert extract_code("```javascript\nconsole.log(1)\n```", python) is None


SOLUTION = "import math\n\n\ndef area(r):\n    return math.pi * r * r\n"
NOISE = [
    ("python", "print(area(2))\n"),
    ("python", "r = 3\nresult = area(r)\nprint(f'area: {result}')\n"),
    ("", "12.566370614359172\n"),
    ("text", "area(2) -> 12.57\n"),
    ("bash", "python3 area.py\n"),
    ("py", ">>> area(1)\n3.141592653589793\n"),
    ("python", "# Test\nassert abs(area(1) - 3.14159) < 1e-4\n"),
    ("", "Traceback (most recent call last):\n  File ...\n"),
]


@given(
    st.lists(st.sampled_from(NOISE), max_size=4),
    st.lists(st.sampled_from(NOISE), max_size=4),
    st.sampled_from(["python", "py", "python3", "Python", ""]),
    st.sampled_from(["```", "~~~", "````"]),
    st.sampled_from(["", "Here is my solution:\n", "Let me think.\n\n"]),
)
def test_the_defining_block_wins_wherever_it_is(
    before: list[tuple[str, str]],
    after: list[tuple[str, str]],
    tag: str,
    fence: str,
    prose: str,
) -> None:
    """Blocks before and after the solution, in any tag and fence style, never displace it."""
    python = lookup("python")
    assert python is not None

    def block(t: str, body: str, f: str = "```") -> str:
        return f"{f}{t}\n{body}{f}\n\nSome words.\n"

    response = (
        prose
        + "".join(block(t, b) for t, b in before)
        + block(tag, SOLUTION, fence)
        + "".join(block(t, b) for t, b in after)
    )
    assert extract_code(response, python, ["area"]) == SOLUTION
