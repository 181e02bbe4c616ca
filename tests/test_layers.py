"""Layers as a test (issue 36): the folder-level import graph of src/assay against tests/layers.toml.
0 cycles, 0 upward arrows, 0 never-arrows; every unit placed. The checker is run on small made-up
packages too, so each rule is seen to fail."""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
LAYERS = Path(__file__).with_name("layers.toml")

Arrows = dict[tuple[str, str], set[str]]  # (from unit, to unit) -> the modules that import


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imported(path: Path, module: str) -> Iterator[str]:
    """Every module an `import` anywhere in the file names (function bodies and TYPE_CHECKING too);
    `from pkg import name` names `pkg.name`, which is a unit when `name` is a submodule."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                prefix = f"{base}.{node.module}" if node.module else base
            else:
                prefix = node.module or ""
            yield prefix
            yield from (f"{prefix}.{alias.name}" for alias in node.names)


def modules_of(root: Path, top: str) -> dict[str, Path]:
    """Every module of package `top` under `root`, by dotted name."""
    modules = {}
    for path in sorted((root / top).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def arrows(root: Path, top: str) -> tuple[set[str], Arrows]:
    """The units of package `top` under `root` and the arrows between them. `from top import x` is an
    arrow only where `x` is a unit (the package itself is always loaded first; `__version__` is no arrow)."""
    modules = modules_of(root, top)
    units = {unit_of(module) for module in modules}
    found: Arrows = defaultdict(set)
    for module, path in modules.items():
        source = unit_of(module)
        for target in imported(path, module):
            if target.startswith(f"{top}.") and unit_of(target) in units - {source}:
                found[(source, unit_of(target))].add(module)
    return units, found


def cycles(found: Arrows) -> list[list[str]]:
    """Strongly connected components of more than one unit (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in found:
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            component.append(v)
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def violations(units: set[str], found: Arrows, rules: dict) -> list[str]:
    """Everything wrong with the graph under `rules` (the parsed layers.toml), one line each."""
    level: dict[str, int] = {}
    problems: list[str] = []
    for n, layer in enumerate(rules["layers"]):
        for unit in layer["units"]:
            if unit in level:
                problems.append(f"{unit} is in two layers")
            level[unit] = n
    problems += [f"{u} is in no layer of tests/layers.toml" for u in sorted(units - set(level))]
    problems += [f"{u} is in layers.toml but not in the source" for u in sorted(set(level) - units)]
    names = [layer["name"] for layer in rules["layers"]]
    for (a, b), modules in sorted(found.items()):
        by = ", ".join(sorted(modules))
        if a in level and b in level and level[b] > level[a]:
            problems.append(f"upward: {a} ({names[level[a]]}) -> {b} ({names[level[b]]}) in {by}")
        for rule in rules.get("never", []):
            if (a in rule["from"] or "*" in rule["from"]) and b in rule["to"]:
                problems.append(f"never: {a} -> {b} in {by} ({rule['why']})")
    problems += [f"cycle: {' <-> '.join(c)}" for c in cycles(found)]
    return problems


def test_src_assay_keeps_its_layers() -> None:
    rules = tomllib.loads(LAYERS.read_text(encoding="utf-8"))
    units, found = arrows(SRC, "assay")
    assert violations(units, found, rules) == []
    assert len(units) > 30 and len(found) > 100  # the walk saw the real tree


def private_reaches(root: Path, top: str) -> list[str]:
    """`importer -> module` for every import of another unit's private module (a `_name` module or
    package anywhere below that unit): a folder's private modules are its own, others compose its
    public surface (issue 36: the session interpreter reached into the sandbox's `_runner`)."""
    modules = modules_of(root, top)
    found = set()
    for module, path in modules.items():
        for target in imported(path, module):
            private = any(p.startswith("_") and not p.startswith("__") for p in target.split(".")[1:])
            if target in modules and private and unit_of(target) != unit_of(module):
                found.add(f"{module} -> {target}")
    return sorted(found)


def test_no_folder_imports_another_folders_private_module() -> None:
    assert private_reaches(SRC, "assay") == []


def _package(tmp_path: Path, files: dict[str, str]) -> tuple[set[str], Arrows]:
    for name, text in {"pkg/__init__.py": "", **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return arrows(tmp_path, "pkg")


RULES = {
    "layers": [{"name": "low", "units": ["__init__", "low", "side"]}, {"name": "high", "units": ["high"]}],
    "never": [{"from": ["low"], "to": ["side"], "why": "kept apart"}],
}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pkg/low.py": "", "pkg/side.py": "", "pkg/high.py": "from pkg import low\n"}, []),
        (
            {"pkg/low.py": "def f():\n    from pkg.high import x\n", "pkg/side.py": "", "pkg/high.py": ""},
            ["upward: low (low) -> high (high) in pkg.low"],
        ),
        (
            {"pkg/low.py": "from . import side\n", "pkg/side.py": "", "pkg/high.py": ""},
            ["never: low -> side in pkg.low (kept apart)"],
        ),
        (
            {
                "pkg/low.py": "",
                "pkg/side.py": "",
                "pkg/high/__init__.py": "",
                "pkg/high/a.py": "from .. import low\n",
                "pkg/extra.py": "import pkg.side\n",
            },
            ["extra is in no layer of tests/layers.toml"],
        ),
    ],
)
def test_the_checker_sees_each_kind_of_violation(
    tmp_path: Path, files: dict[str, str], expected: list[str]
) -> None:
    units, found = _package(tmp_path, files)
    assert violations(units, found, RULES) == expected


def test_the_checker_finds_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    units, found = _package(
        tmp_path,
        {
            "pkg/low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.side import s\n",
            "pkg/side.py": "def g():\n    import pkg.low\n",
            "pkg/high.py": "",
        },
    )
    assert cycles(found) == [["low", "side"]]
    assert "cycle: low <-> side" in violations(units, found, RULES)


def test_the_checker_sees_an_import_of_another_units_private_module(tmp_path: Path) -> None:
    _package(
        tmp_path,
        {
            "pkg/low/__init__.py": "from pkg.low import _inner\n",  # its own: allowed
            "pkg/low/_inner.py": "def _helper():\n    pass\n",
            "pkg/side.py": "from pkg.low._inner import _helper\n",
            "pkg/high.py": "def f():\n    from pkg.low import _inner, _helper\n",
        },
    )
    assert private_reaches(tmp_path, "pkg") == ["pkg.high -> pkg.low._inner", "pkg.side -> pkg.low._inner"]
