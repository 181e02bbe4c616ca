"""Task lookup, options validation and plugin loading."""

from __future__ import annotations

import logging

import pytest

from assay.errors import ConfigError, OptionsError, UnknownTaskError
from assay.registry import Registry, folder_tasks, read_section
from assay.settings import Settings


def test_unknown_task_suggests_the_closest_name() -> None:
    registry = Registry.from_settings(Settings())
    with pytest.raises(UnknownTaskError, match='did you mean "math"'):
        registry.lookup("maths")


def test_unknown_option_suggests_the_closest_key() -> None:
    math = Registry.from_settings(Settings()).lookup("math")
    with pytest.raises(OptionsError, match=r'unknown option "rel_tl".*did you mean "rel_tol"'):
        math.parse_options({"rel_tl": 0.1})


def test_ill_typed_option_names_the_field() -> None:
    math = Registry.from_settings(Settings()).lookup("math")
    with pytest.raises(OptionsError, match="rel_tol"):
        math.parse_options({"rel_tol": "lots"})


def test_plugins_register_tasks() -> None:
    registry = Registry.from_settings(Settings(plugins=["assay_test_plugins:HangScorer"]))
    assert "hang" in registry and "math" in registry


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_colon_here", "must look like"),
        ("assay_test_plugins:Missing", "cannot load plugin"),
        ("no_such_module_xyz:Thing", "cannot load plugin"),
        ("assay.settings:Settings", "not a subclass"),
    ],
)
def test_bad_plugins_fail_at_start_up_with_a_reason(path: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Registry.from_settings(Settings(plugins=[path]))


def test_every_built_in_task_is_a_folder_found_by_its_task_line() -> None:
    assert set(folder_tasks()) == {"code", "judge", "math", "prm", "reasoning_gym", "repo", "sql"}
    assert set(folder_tasks()) <= set(Registry.from_settings(Settings()))


def test_the_task_that_runs_programs_is_the_one_whose_scorer_offers_run_program() -> None:
    registry = Registry.from_settings(Settings())
    assert registry.program_runner() is registry["code"]
    assert Registry({"math": registry["math"]}).program_runner() is None


SECTIONED = "assay_test_plugins:SectionedScorer"


def test_a_task_reads_its_own_settings_section_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay_test_plugins import LimitSettings

    assert read_section(Settings(plugins=[SECTIONED]), "sectioned", LimitSettings).limit == 3
    monkeypatch.setenv("ASSAY_TASKS__SECTIONED__LIMIT", "7")
    settings = Settings(plugins=[SECTIONED])
    assert settings.tasks == {"sectioned": {"limit": "7"}}
    assert Registry.from_settings(settings)["sectioned"].Section is LimitSettings
    assert read_section(settings, "sectioned", LimitSettings).limit == 7


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ({"sectioned": {"limt": 4}}, r'unknown setting "tasks.sectioned.limt" \(did you mean "limit"\?\)'),
        ({"sectioned": {"limit": 0}}, 'bad settings for task "sectioned": tasks.sectioned.limit'),
        ({"sectoned": {"limit": 4}}, 'task "sectoned" .*did you mean "sectioned"'),
        ({"math": {"limit": 4}}, 'task "math" .*no section of its own'),
    ],
)
def test_a_wrong_task_section_fails_at_start_up_with_a_reason(
    tasks: dict[str, dict[str, int]], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Registry.from_settings(Settings(plugins=[SECTIONED], tasks=tasks))


def test_tasks_describe_their_options_schema() -> None:
    info = Registry.from_settings(Settings()).lookup("math").info()
    assert info.name == "math"
    assert "rel_tol" in info.options_schema["properties"]


def test_building_the_math_and_sql_scorers_leaves_other_libraries_log_levels_alone() -> None:
    from assay.verifiers.math import MathScorer
    from assay.verifiers.sql import SqlScorer

    names = [*MathScorer.quiet_loggers, *SqlScorer.quiet_loggers]
    assert set(names) >= {"math_verify", "sqlglot"}
    before = {name: logging.getLogger(name).level for name in names}
    MathScorer(Settings())
    SqlScorer(Settings())
    assert {name: logging.getLogger(name).level for name in names} == before
