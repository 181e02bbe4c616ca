"""Assay installs next to the trainers: a fresh virtualenv holding Assay plus verl's and TRL's declared
requirement pins (hydra-core with its antlr 4.9, omegaconf, their transformers ranges) resolves, parses a
verl config with hydra as verl does, and scores.

Assay used to pin antlr 4.13.2 (`math-verify[antlr4_13_2]`), with which hydra's grammar fails to load
("Could not deserialize ATN with version 3 (expected 4)"): installing Assay into a verl environment broke
verl (issue 31). The pins are read from verl 0.9.1's and TRL 1.16's metadata in this environment (see
scripts/setup_trainer_clients.sh), not copied here. Slow: the virtualenv installs from the pip cache.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from assay.engine.scoring import Engine
from assay.settings import Settings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
CASES = [ROOT / "tests" / "cases" / name for name in ("math.jsonl", "math_wild.jsonl")]
# The trainers' requirements that meet Assay's own dependency tree or its optional extras.
SHARED = {"hydra-core", "omegaconf", "antlr4-python3-runtime", "transformers"}
# verl's entry point composes its config with hydra and applies command line overrides (hydra's own
# antlr grammar parses them): what failed under antlr 4.13.
VERL_CONFIG = """
import sys
from hydra import compose, initialize_config_dir
with initialize_config_dir(config_dir=sys.argv[1], version_base=None):
    overrides = ["algorithm.adv_estimator=grpo", "data.train_batch_size=8"]
    cfg = compose(config_name="ppo_trainer", overrides=overrides)
print(cfg.algorithm.adv_estimator, cfg.data.train_batch_size)
"""
SCORE = """
import json, sys
from assay.engine.scoring import Engine
from assay.settings import Settings
cases = [json.loads(line) for path in sys.argv[1:] for line in open(path) if line.strip()]
items = [{k: c[k] for k in ("id", "task", "response", "reference")} for c in cases]
with Engine(Settings(workers=1)) as engine:
    print(json.dumps({r.id: [r.status.value, r.correct] for r in engine.score(items)}))
"""


def trainer_pins() -> list[str]:
    """verl's and TRL's base requirements (no extra) on the packages Assay's environment shares."""
    pins = []
    for dist in ("verl", "trl"):
        for text in importlib.metadata.requires(dist) or []:
            requirement = Requirement(text)
            if requirement.name in SHARED and requirement.marker is None:
                pins.append(str(requirement))
    return pins


def _run(*command: str | Path, timeout: float = 600) -> str:
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout


def _assay_source(parent: Path) -> Path:
    """A copy of what pip builds Assay from, so a build writes no egg-info into the checkout."""
    source = parent / "assay"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copy(ROOT / "README.md", source)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return source


@pytest.fixture(scope="module")
def trainer_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv (no system site packages) with Assay and the trainers' pins, resolved together."""
    source = _assay_source(tmp_path_factory.mktemp("source"))
    env = tmp_path_factory.mktemp("trainer-venv")
    venv.create(env, with_pip=True, system_site_packages=False)
    python = env / "bin" / "python"
    pins = trainer_pins()
    assert {Requirement(p).name for p in pins} >= {"hydra-core", "transformers"}, pins
    _run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", source, *pins, timeout=800)
    return python


def test_the_trainer_pins_resolve_with_assay_on_antlr_4_9(trainer_python: Path) -> None:
    installed = _run(trainer_python, "-m", "pip", "list", "--format", "json")
    versions = {p["name"].lower(): p["version"] for p in json.loads(installed)}
    assert versions["antlr4-python3-runtime"].startswith("4.9."), versions
    assert {"assay", "hydra-core", "omegaconf", "transformers", "math-verify"} <= set(versions)


def test_verls_config_loads_with_hydra_there(trainer_python: Path) -> None:
    config_dir = Path(importlib.metadata.distribution("verl").locate_file("verl/trainer/config"))
    assert (config_dir / "ppo_trainer.yaml").is_file()
    assert _run(trainer_python, "-c", VERL_CONFIG, config_dir).split() == ["grpo", "8"]


def test_assay_scores_the_math_cases_there_as_it_does_here(trainer_python: Path) -> None:
    # The LaTeX parser is antlr-generated: its verdicts must not depend on the antlr runtime installed.
    there = json.loads(_run(trainer_python, "-c", SCORE, *CASES))
    cases = [json.loads(line) for path in CASES for line in path.read_text().splitlines() if line.strip()]
    items = [{k: c[k] for k in ("id", "task", "response", "reference")} for c in cases]
    with Engine(Settings(workers=1)) as engine:
        here = {r.id: [r.status.value, r.correct] for r in engine.score(items)}
    assert len(there) == len(cases) > 600
    differ = {k: (here[k], there[k]) for k in here if here[k] != there[k]}
    assert not differ, differ


def _documented_installs() -> list[list[str]]:
    """The `pip install` lines of docs/tutorial.md's "Next to a trainer" block that install Assay."""
    import shlex

    text = (ROOT / "docs" / "tutorial.md").read_text()
    block = text.split("### Next to a trainer", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [shlex.split(line, comments=True) for line in block.splitlines()]
    return [
        words[2:]
        for words in lines
        if words[:2] == ["pip", "install"] and "/path/to/assay" in " ".join(words)
    ]


def test_each_documented_trainer_install_resolves_in_a_fresh_venv(tmp_path: Path) -> None:
    """Issue 38 item 6: the tutorial's commands that put Assay next to verl, TRL, OpenEnv and OpenRLHF's
    pins resolve together from an empty environment (pip's own resolver, `--dry-run`), with the versions
    the page names; CPU torch as the first line of the block installs it."""
    installs = _documented_installs()
    assert len(installs) == 2, installs
    source = _assay_source(tmp_path)
    env = tmp_path / "venv"
    venv.create(env, with_pip=True, system_site_packages=False)
    resolved = []
    for number, arguments in enumerate(installs):
        report = tmp_path / f"report-{number}.json"
        arguments = [a.replace("/path/to/assay", str(source)) for a in arguments]
        pip = [env / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        _run(*pip, "--dry-run", "--report", report, *arguments, "torch==2.13.0", timeout=600)
        installed = json.loads(report.read_text())["install"]
        resolved.append({i["metadata"]["name"].lower(): i["metadata"]["version"] for i in installed})
    together, openrlhf = resolved
    assert {k: together[k] for k in ("verl", "openenv", "trl")} == {
        "verl": "0.9.1",
        "openenv": "0.10.0",
        "trl": "1.16.0",
    }
    assert together["antlr4-python3-runtime"] == "4.9.3"  # what hydra's grammar and math-verify both load
    assert together["transformers"].startswith("5.") and int(together["transformers"].split(".")[1]) < 11
    assert "ray" in together and "assay" in together
    assert (openrlhf["transformers"], openrlhf["ray"]) == ("5.15.0", "2.55.0") and "assay" in openrlhf
