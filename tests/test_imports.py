"""The package's import graph, read from the source with `ast`: no module imports itself round a cycle.

Every import counts (also those inside functions: a lazy import still ties two modules together) except
those under `if TYPE_CHECKING:`, which never run. An import of a package counts as an import of its
`__init__`; `from package import name` counts `package.name` when that is a module, and the package's
`__init__` only when some name is not a module (as `from package.module import name` does not count
`package`: Python runs a package's `__init__` before any of its modules either way).
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool, modules: set[str]) -> set[str]:
    found: set[str] = set()
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            todo.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, *([node.module] if node.module else [])])
            named = {f"{base}.{alias.name}" for alias in node.names}
            found.update(named & modules)
            if named - modules:
                found.add(base)
        todo.extend(ast.iter_child_nodes(node))
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of src/ it imports."""
    files = {_module_name(path): path for path in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = _imports(tree, module, path.name == "__init__.py", set(files))
        graph[module] = {t for t in targets if t in files and t != module}
    return graph


def test_the_graph_sees_the_package() -> None:
    graph = import_graph()
    assert "assay.engine.running" in graph["assay.engine.scoring"]  # a module-level import
    assert "assay.engine.scoring" in graph["assay.distributed.deployments"]  # one inside a function
    assert "assay.engine.service" not in graph["assay.engine.scoring"]  # only under TYPE_CHECKING


def test_no_import_cycle_anywhere_in_src() -> None:
    graph = import_graph()
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None
