"""The service protocol: both engines implement it, and the HTTP routes use nothing else of an engine."""

from __future__ import annotations

import ast
import asyncio
import inspect
from pathlib import Path

import pytest

from assay.distributed.engine import RayEngine
from assay.engine.scoring import Engine
from assay.engine.service import Service
from assay.metrics import Metrics
from assay.sandbox import Program
from assay.settings import Settings

API = Path(__file__).resolve().parents[2] / "src" / "assay" / "api"
ATTRIBUTES = set(Service.__annotations__)  # settings, metrics, registry
METHODS = {name for name in vars(Service) if not name.startswith("_")}
MEMBERS = ATTRIBUTES | METHODS


def test_the_protocol_names_the_surface_sessions_will_extend() -> None:
    expected = {"settings", "metrics", "registry", "pending", "admit", "release", "score_async"}
    expected |= {"score_groups_async", "run_program", "worker_restarts", "start", "aclose"}
    assert expected <= MEMBERS


def test_both_engines_are_services() -> None:
    settings = Settings(workers=1)
    assert isinstance(RayEngine(settings, Metrics(), {}), Service)
    with Engine(settings) as engine:
        assert isinstance(engine, Service)
    for name in METHODS:  # the same async-ness on both
        ours = inspect.iscoroutinefunction(getattr(Service, name, None))
        assert inspect.iscoroutinefunction(getattr(Engine, name)) == ours, name
        assert inspect.iscoroutinefunction(getattr(RayEngine, name)) == ours, name


def _engine_attributes(tree: ast.AST) -> set[str]:
    """Attributes read off anything the routes call an engine: `engine.x`, `engine_of(r).x`,
    `request.app.state.engine.x`."""

    def is_engine(owner: ast.expr) -> bool:
        if isinstance(owner, ast.Name):
            return owner.id == "engine"
        if isinstance(owner, ast.Call):
            return getattr(owner.func, "id", None) == "engine_of"
        return isinstance(owner, ast.Attribute) and owner.attr == "engine"

    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and is_engine(n.value)}
    return used


def test_the_routes_call_only_the_protocol() -> None:
    used: dict[str, set[str]] = {}
    for path in sorted(API.glob("*.py")):
        used[path.name] = _engine_attributes(ast.parse(path.read_text())) - MEMBERS
    assert {name: extra for name, extra in used.items() if extra} == {}
    assert "run_program" in _engine_attributes(ast.parse((API / "run_code.py").read_text()))


def test_an_engine_runs_no_program_once_closed() -> None:
    engine = Engine(Settings(workers=1))
    engine.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(engine.run_program(Program("python", "print(1)")))


def test_the_ray_engine_says_when_no_code_deployment_can_run_a_program() -> None:
    from assay.sandbox import SandboxError

    engine = RayEngine(Settings(workers=1), Metrics(), {})
    with pytest.raises(SandboxError, match="no code deployment"):
        asyncio.run(engine.run_program(Program("python", "print(1)")))
