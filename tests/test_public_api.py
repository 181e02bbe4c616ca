"""What users import is pinned; importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import assay


def test_public_names_are_pinned() -> None:
    assert sorted(assay.__all__) == [
        "Engine",
        "Item",
        "Result",
        "Scorer",
        "Settings",
        "Status",
        "TaskOptions",
        "__version__",
        "score",
    ]
    for name in assay.__all__:
        assert hasattr(assay, name)


def test_importing_assay_and_the_api_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, assay, assay.api, assay.client, assay.cli, assay.engine.scoring\n"
        "from assay.registry import Registry\n"
        "from assay.settings import Settings\n"
        "Registry.from_settings(Settings())\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'vllm', 'docker') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == ""
