"""`assay serve --ray [--address ADDR]` hands the settings to the Ray server; plain `serve` does not."""

from __future__ import annotations

from typing import Any

import pytest

import assay.distributed
from assay.cli import main
from assay.settings import Settings


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Settings, str | None]]:
    calls: list[tuple[Settings, str | None]] = []

    def fake_serve(settings: Settings, address: str | None = None) -> int:
        calls.append((settings, address))
        return 0

    monkeypatch.setattr(assay.distributed, "serve", fake_serve)
    return calls


def test_serve_ray_passes_the_settings_and_no_address(served: list[Any]) -> None:
    assert main(["serve", "--ray", "--port", "8123", "--workers", "3"]) == 0
    [(settings, address)] = served
    assert (settings.port, settings.workers, address) == (8123, 3, None)


def test_an_address_implies_ray(served: list[Any]) -> None:
    assert main(["serve", "--address", "ray://head:10001"]) == 0
    assert served[0][1] == "ray://head:10001"
