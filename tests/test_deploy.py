"""docker-compose.yml and the Dockerfile: no engine exists here, so check what can be checked without one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from assay.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def _settings_field_exists(env_name: str) -> bool:
    """ASSAY_A__B names field b of section a (pydantic-settings' nesting)."""
    path = env_name.removeprefix("ASSAY_").lower().split("__")
    model: type[BaseModel] = Settings
    for depth, part in enumerate(path):
        field = model.model_fields.get(part)
        if field is None:
            return False
        annotation = field.annotation
        if depth < len(path) - 1:
            if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
                return False
            model = annotation
    return True


def test_compose_parses_with_the_service_and_both_profiles() -> None:
    services = _compose()["services"]
    assert "assay" in services
    assert services["vllm-judge"]["profiles"] == ["judge"]
    assert services["vllm-prm"]["profiles"] == ["prm"]
    assert "--runner" in services["vllm-prm"]["command"]


def test_every_assay_variable_in_compose_is_a_setting() -> None:
    names = [
        name
        for service in _compose()["services"].values()
        for name in (service.get("environment") or {})
        if name.startswith("ASSAY_")
    ]
    assert names, "compose sets no ASSAY_ variables"
    unknown = [n for n in names if not _settings_field_exists(n)]
    assert unknown == []


def test_the_setting_name_check_rejects_unknown_names() -> None:
    assert _settings_field_exists("ASSAY_SQL__DATABASES")
    assert not _settings_field_exists("ASSAY_SQL__DATABASE")
    assert not _settings_field_exists("ASSAY_NOPE")


def test_the_dockerfile_installs_the_package_and_serves_on_the_compose_port() -> None:
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert 'CMD ["assay", "serve"]' in dockerfile
    assert "ASSAY_PORT=8000" in dockerfile and "EXPOSE 8000" in dockerfile
    assert "bubblewrap" in dockerfile
    assert _settings_field_exists("ASSAY_HOST") and _settings_field_exists("ASSAY_PORT")
