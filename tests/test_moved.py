"""Modules that moved (issue 24) keep their old import paths: each old path imports, warns once with a
DeprecationWarning that names the new path and points at the importing line, and gives the same objects;
verl's file-path loading of the old adapter file still finds `compute_score`. The package itself never
imports an old path, and the layers import downwards only (the loop uses neither the product nor the
adapters)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from pathlib import Path
from types import ModuleType

import pytest
from test_imports import SRC, import_graph

from assay._moved import MOVED


def _fresh_import(
    old: str,
) -> tuple[ModuleType, list[warnings.WarningMessage], list[warnings.WarningMessage]]:
    """Import `old` as a user's file would, twice, with its shim dropped from `sys.modules` first; the
    module and the warnings of each import. The module that was there before is put back."""
    parent = old.rpartition(".")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        importlib.import_module(parent)  # a parent shim warns on its own import, not this one's
    before = sys.modules.pop(old, None)
    code = compile(f"import {old}", "users_config.py", "exec")
    try:
        with warnings.catch_warnings(record=True) as first:
            warnings.simplefilter("always")
            exec(code, {})
        with warnings.catch_warnings(record=True) as second:
            warnings.simplefilter("always")
            exec(code, {})
        return sys.modules[old], first, second
    finally:
        if before is not None:
            sys.modules[old] = before


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_imports_warns_once_and_gives_the_same_objects(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    module, first, second = _fresh_import(old)
    assert [type(w.message) for w in first] == [DeprecationWarning]
    assert MOVED[old] in str(first[0].message)
    assert first[0].filename == "users_config.py"  # the user's import line, not importlib's
    assert second == []
    public = {name: value for name, value in vars(new).items() if not name.startswith("_")}
    assert public
    for name, value in public.items():
        assert getattr(module, name) is value, name


def test_verl_still_loads_the_adapter_from_its_old_file_path() -> None:
    """verl's `custom_reward_function.path` loads a file by path as a module of its own name."""
    from assay.integrations import verl

    path = SRC / "assay" / "rl_client" / "integrations" / "verl.py"
    spec = importlib.util.spec_from_file_location("custom_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.warns(DeprecationWarning, match="assay.integrations.verl"):
        spec.loader.exec_module(module)
    assert module.compute_score is verl.compute_score
    assert module.compute_score_batch is verl.compute_score_batch


def test_every_shim_is_listed_and_nothing_in_the_package_imports_one() -> None:
    shims = {
        ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        for path in SRC.rglob("*.py")
        if "warn_moved(" in path.read_text() and path.name != "_moved.py"
    }
    assert shims == set(MOVED)
    for module, targets in import_graph().items():
        if module not in shims:
            assert not targets & shims, f"{module} imports the deprecated {sorted(targets & shims)}"


def _layer(module: str) -> str | None:
    if module.startswith("assay.rl_client.runs") or module == "assay.rl_client.__main__":
        return "runs"  # `python -m assay.rl_client` is `assay train`
    if module.startswith("assay.integrations"):
        return "integrations"
    if module.startswith("assay.rl_client") and module not in MOVED:
        return "loop"
    return None


def test_the_loop_imports_neither_the_product_nor_the_adapters() -> None:
    allowed = {"loop": {"loop"}, "runs": {"loop", "runs"}, "integrations": {"integrations"}}
    for module, targets in import_graph().items():
        layer = _layer(module)
        if layer is None:
            continue
        for target in targets:
            other = _layer(target)
            assert other is None or other in allowed[layer], f"{module} ({layer}) imports {target} ({other})"


def test_each_module_of_the_loop_and_the_product_is_named_in_its_package_docstring() -> None:
    """The package docstrings are the module maps a new reader starts from: they must not go stale."""
    import assay.rl_client
    import assay.rl_client.runs

    for package in (assay.rl_client, assay.rl_client.runs):
        folder = Path(package.__file__ or "").parent
        names = {p.name for p in folder.glob("*.py")} - {"__init__.py", "__main__.py"}
        shims = {f"{n.rpartition('.')[2]}.py" for n in MOVED if n.rpartition(".")[0] == package.__name__}
        for name in sorted(names - shims):
            assert name in (package.__doc__ or ""), f"{package.__name__}'s docstring does not name {name}"
