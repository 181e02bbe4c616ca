"""The README stays true: its settings table matches Settings, its quick start is the Makefile's."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _table_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("settings_table", ROOT / "scripts" / "settings_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_settings_table_matches_the_settings() -> None:
    readme = (ROOT / "README.md").read_text()
    assert _table_module().table() in readme, "run: python scripts/settings_table.py --write"


def test_the_quick_start_is_make_serve_and_make_test() -> None:
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "make serve" in readme and "make test" in readme
    assert "\nserve:" in makefile and "\ntest:" in makefile
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("make test")
