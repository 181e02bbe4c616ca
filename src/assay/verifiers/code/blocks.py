"""Which program in a model's response is the solution: the one place the code task finds its code.

Responses hold more than one block: a solution then a usage example, an untagged solution then a
```python demo, a first try then a fix, an output block, prose between. A reader takes the block that
defines what the tests call (the entry point: a call test's `fn_name`, the names an assert test uses
but does not define); failing that, the longest complete program. A later example or output block
never displaces the solution. Without any fence, the whole response is the program, unless it is
prose with indented (Markdown) code, in which case the indented code is.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

from assay.sandbox import Language

# An opening fence (``` or ~~~, any length >= 3), its info string, the body, and the same fence closing
# it: on a line of its own, or ending the body's last line (`return x````, as models write), or the end of
# the response (a truncated answer still holds a program).
_FENCE = re.compile(
    r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n"
    r"(?P<body>.*?)(?:^[ \t]{0,3}(?P=fence)[ \t]*$|(?<![`~])(?P=fence)[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE,
)
_INLINE_FENCE = re.compile(r"```[ \t]*([^\n`]*)\n(.*?)```", re.DOTALL)  # a fence that does not start a line
_INDENTED = re.compile(r"(?:^(?:    |\t)[^\n]*\n?|^[ \t]*\n)+", re.MULTILINE)
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class Block:
    tag: str  # the info string's first word, lower case, without `{.` decoration
    body: str


def blocks(response: str) -> list[Block]:
    """The fenced blocks of a response, in order."""
    found = []
    for match in _FENCE.finditer(response):
        info = match["info"].strip().lower().lstrip("{").lstrip(".")
        found.append(Block(re.split(r"[\s,{}]", info, maxsplit=1)[0] if info else "", match["body"]))
    if not found:  # ```python on the same line as prose
        found = [Block(t.strip().lower(), b) for t, b in _INLINE_FENCE.findall(response)]
    return found


def extract_code(response: str, language: Language, entry_points: Iterable[str] = ()) -> str | None:
    """The program a reader would take from `response`, or None when it has no code in `language`."""
    found = blocks(response)
    if not found:
        if "```" in response or "~~~" in response:
            return None
        return _unfenced(response, language)
    tags = {language.name, *language.aliases}
    tagged = [b.body for b in found if b.tag in tags]
    untagged = [b.body for b in found if b.tag == ""]
    candidates = [body for body in tagged + untagged if body.strip()]
    if not candidates:
        return None
    return pick(candidates, language, tuple(entry_points)) or (tagged or untagged)[-1]


def pick(candidates: list[str], language: Language, entry_points: tuple[str, ...]) -> str | None:
    """The last candidate that defines an entry point, else the longest complete program."""
    if entry_points:
        defining = [c for c in candidates if defines(c, language, entry_points)]
        if defining:
            return defining[-1]
    complete = [c for c in candidates if _complete(c, language)]
    return max(complete, key=lambda c: len(c.strip())) if complete else None


def _unfenced(response: str, language: Language) -> str:
    """The whole response, or the indented code of a prose answer (Python only: we can tell prose)."""
    if language.name != "python" or _parses(response):
        return response
    indented = [textwrap.dedent(m.group(0)) for m in _INDENTED.finditer(response)]
    indented = [code for code in indented if code.strip() and _parses(code)]
    return max(indented, key=len) if indented else response


def _parses(source: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in the policy's code are its business
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _complete(source: str, language: Language) -> bool:
    """Whether a block could be a whole program (not an output or a fragment)."""
    if language.name == "python":
        tree = _parses(source)
        return tree is not None and any(not isinstance(node, ast.Expr) for node in tree.body)
    if language.name == "cpp":
        return "main" in source
    if language.name == "java":
        return "class" in source
    return bool(source.strip())


def defines(source: str, language: Language, names: tuple[str, ...]) -> bool:
    """Whether the program defines one of `names` (a function, a class, or a method of one)."""
    if language.name != "python":
        return any(re.search(rf"\b{re.escape(name)}\s*\(", source) for name in names)
    tree = _parses(source)
    if tree is None:
        return any(re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(n)}\s*\(", source, re.M) for n in names)
    defined = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    assigned = {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    return bool((defined | assigned) & set(names))


def used_names(test_code: str) -> list[str]:
    """Names a test calls or passes but does not define itself or get from builtins: its entry points."""
    tree = _parses(test_code)
    if tree is None:
        return []
    own = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    own |= {
        node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    own |= {a.arg for node in ast.walk(tree) if isinstance(node, ast.arguments) for a in node.args}
    own |= {
        a.asname or a.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for a in node.names
    }
    names = [
        node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    ]
    return list(dict.fromkeys(n for n in names if n not in own and n not in _BUILTINS))


def last_function(source: str) -> str | None:
    """The last top-level function a program defines (HumanEval's entry point comes after its helpers)."""
    tree = _parses(source)
    if tree is None:
        return None
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return functions[-1] if functions else None


@dataclass(frozen=True)
class AssertShape:
    """What an assert test does, read statically (an unparseable test is taken as doing something)."""

    defines_check: bool  # a top-level `def check(...)`, HumanEval's and MBPP's test shape
    calls_check: bool
    asserts_or_calls: bool  # without either, the test cannot fail


def assert_shape(test_code: str) -> AssertShape:
    tree = _parses(test_code)
    if tree is None:
        return AssertShape(False, False, True)
    defines = any(isinstance(n, ast.FunctionDef) and n.name == "check" for n in tree.body)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    calls_check = any(isinstance(c.func, ast.Name) and c.func.id == "check" for c in calls)
    asserts = any(isinstance(n, ast.Assert | ast.Raise) for n in ast.walk(tree))
    # Calls inside a function that nothing calls do not run: only module-level statements count.
    runs = [n for stmt in tree.body if not isinstance(stmt, ast.FunctionDef) for n in ast.walk(stmt)]
    top_asserts = any(isinstance(n, ast.Assert | ast.Call | ast.Raise) for n in runs)
    return AssertShape(defines, calls_check, top_asserts or (asserts and calls_check))
