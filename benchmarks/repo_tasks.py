"""Repository tasks from real projects' test suites, SWE-smith style, and the `repo` task measured on them.

    .venv/bin/python benchmarks/repo_tasks.py [--per-project N] [--out DIR] [--prefix DIR] [--projects ...]
        [--changes KIND ...] [--no-concurrent]

For each project, its source distribution is downloaded from the package index at run time (`pip download
--no-binary :all: --no-deps NAME==VERSION`; nothing of it is kept in this repository), unpacked into
DIR/repos/<name>, and committed to a fresh git repository. Bugs are injected one at a time: one
expression in one function of the project's code is mutated (a comparison, an arithmetic or boolean
operator, a constant), the project's own tests are run, and the tests that passed before and fail now
are FAIL_TO_PASS; the rest of the passing tests are PASS_TO_PASS; the reverse diff is the gold patch.
Each bug is a commit (tagged) on top of the pristine one: the task's `base_commit`. A project's own
dependencies (bleach: webencodings; jsonschema: attrs, referencing, rpds-py, ...) come from the
environment the repo task builds from its metadata (`assay.verifiers.repo.dependencies`, cached under
DIR/envs); the baseline's plain pytest gets the same directory on its path.

Then, side by side in one run: gold patches rewarded, empty patches, test-editing patches (assertions
weakened in the FAIL_TO_PASS tests' file, and a conftest that passes every test), patches that change a
different function, and the time per task against plain pytest in a subprocess on a fresh copy at the
same commit with the gold patch applied (no sandbox) as the baseline. Targets (issue 27): gold 30/30,
the others 0, time at most 1.5x the baseline. Issue 37's classes, each leaving the bug in place:
`history` (the module execs the clean file from `git show HEAD~1:` at import), `bytecode` (an
unchecked-hash `.pyc` of the fixed module), `config` (a `pytest.toml` loading a plugin that passes every
test outside the old canary's file), `forged` (the module patches pytest's reports at import, sparing
the same); target 0 each. `--changes` picks the kinds measured (gold always); rewards, the time
ratio and the gold runs' canaries by kind (`details.canaries`: changed value, false assertion, not
collected) are printed per project.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.settings import RepoSettings, Settings
from assay.types import Item, Status
from assay.verifiers.repo import RepoOptions, RepoScorer
from assay.verifiers.repo.dependencies import Environments

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    test_cmd: str | None = None  # parse's addopts ask for pytest-cov, which the runtime does not have


# bleach needs webencodings and jsonschema attrs, referencing, rpds-py, ... (none in the sandbox runtime):
# the repo task builds their environments from their own metadata. jsonschema's suite (7,000 tests) takes
# over 10 s; its CLI tests need the project installed (importlib.metadata), so they are left out.
PROJECTS = (
    Project("toolz", "1.0.0"),
    Project("inflection", "0.5.1"),
    Project("cachetools", "8.0.2"),
    Project("six", "1.17.0"),
    Project("parse", "1.22.4", test_cmd="pytest -o addopts="),
    Project("bleach", "6.2.0"),
    Project("jsonschema", "4.25.1", test_cmd="pytest --ignore=jsonschema/tests/test_cli.py"),
)
CHANGES = ("gold", "empty", "test_edit", "conftest", "other", "history", "bytecode", "config", "forged")
_SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.And: ast.Or,
    ast.Or: ast.And,
}
_PLUGIN = """import json, os
_OUT = {}
def pytest_runtest_logreport(report):
    if report.when == "call" or report.failed:
        prev = _OUT.get(report.nodeid)
        _OUT[report.nodeid] = report.outcome if prev in (None, "passed") else prev
def pytest_sessionfinish(session):
    with open(os.environ["ASSAY_BENCH_RESULTS"], "w") as fh:
        json.dump(_OUT, fh)
"""


def git(cwd: Path, *args: str) -> str:
    argv = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=True, timeout=120).stdout


def download(project: Project, cache: Path, repos: Path) -> Path:
    """The project's sdist, unpacked into repos/<name> as a git repository with one commit."""
    cache.mkdir(parents=True, exist_ok=True)
    spec = f"{project.name}=={project.version}"
    found = list(cache.glob(f"{project.name.replace('-', '_')}-{project.version}.tar.gz"))
    found += list(cache.glob(f"{project.name}-{project.version}.tar.gz"))
    if not found:
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps"]
        subprocess.run([*pip, "-d", str(cache), spec], check=True, timeout=300)
        found = sorted(cache.glob(f"*{project.version}.tar.gz"))
        found = [f for f in found if f.name.lower().startswith(project.name.replace("-", "_").lower())]
    repo = repos / project.name
    shutil.rmtree(repo, ignore_errors=True)
    with tarfile.open(found[0]) as tar, tempfile.TemporaryDirectory() as tmp:
        tar.extractall(tmp, filter="data")
        (top,) = Path(tmp).iterdir()
        shutil.copytree(top, repo)
    for junk in repo.glob("*.egg-info"):
        shutil.rmtree(junk)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", spec)
    return repo


def source_files(repo: Path) -> list[Path]:
    """The project's own modules: not tests, not packaging or documentation."""
    skip = {"setup.py", "versioneer.py", "conftest.py", "_version.py", "noxfile.py"}
    files = []
    for path in sorted(repo.rglob("*.py")):
        rel = path.relative_to(repo)
        if path.name in skip or path.name.startswith("test") or "tests" in rel.parts or "docs" in rel.parts:
            continue
        files.append(path)
    return files


def mutations(path: Path, rng: random.Random) -> Iterator[tuple[str, str, str]]:
    """(function name, mutated source, description): one single-line expression changed per mutant."""
    source = path.read_text()
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            op = getattr(node, "op", None) or (node.ops[0] if isinstance(node, ast.Compare) else None)
            swappable = isinstance(node, ast.BoolOp | ast.BinOp | ast.Compare) and type(op) in _SWAPS
            if swappable and node.lineno == node.end_lineno:
                found.append((func.name, node))
    rng.shuffle(found)
    for name, node in found:
        mutant = ast.parse(ast.unparse(node), mode="eval").body
        if isinstance(mutant, ast.Compare):
            mutant.ops[0] = _SWAPS[type(mutant.ops[0])]()
        else:
            mutant.op = _SWAPS[type(mutant.op)]()  # type: ignore[union-attr]
        line = lines[node.lineno - 1]
        assert node.end_col_offset is not None
        text = line[: node.col_offset] + ast.unparse(mutant) + line[node.end_col_offset :]
        new = "".join([*lines[: node.lineno - 1], text, *lines[node.lineno :]])
        try:
            ast.parse(new)
        except SyntaxError:
            continue
        yield name, new, f"{name}: {ast.unparse(node)} -> {ast.unparse(mutant)}"


def plain_pytest(
    copy: Path, prefix: Path, args: list[str], files: list[str] | None = None, env: Path | None = None
) -> dict[str, str]:
    """The baseline: pytest in a subprocess on the copy, no sandbox; node id -> outcome. `env`: the
    project's dependencies (the directory the repo task builds), on the path after the copy."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "_bench_results.py").write_text(_PLUGIN)
        out = Path(tmp) / "out.json"
        paths = [tmp, str(prefix), *([str(copy / "src")] if (copy / "src").is_dir() else []), str(copy)]
        paths += [str(env)] if env is not None else []
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": tmp,
            "PYTHONPATH": ":".join(paths),
            "ASSAY_BENCH_RESULTS": str(out),
        }
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        argv = ["/usr/bin/python3", "-m", "pytest", "-q", "-p", "_bench_results", "-p", "no:cacheprovider"]
        subprocess.run([*argv, *args, *(files or [])], cwd=copy, env=env, capture_output=True, timeout=600)
        return json.loads(out.read_text()) if out.exists() else {}


def fresh_copy(repo: Path, commit: str, into: Path) -> Path:
    copy = into / "w"
    subprocess.run(["cp", "--reflink=auto", "-a", str(repo), str(copy)], check=True)
    git(copy, "checkout", "-q", "--force", commit)
    return copy


def make_tasks(
    project: Project, repo: Path, prefix: Path, count: int, seed: int, env: Path | None = None
) -> list[dict[str, Any]]:
    """Up to `count` injected-bug tasks for one project (a mutant that breaks no test is dropped)."""
    args = project.test_cmd.split()[1:] if project.test_cmd else []
    base = plain_pytest(repo, prefix, args, env=env)
    passing = sorted(n for n, o in base.items() if o == "passed")
    pristine = git(repo, "rev-parse", "HEAD").strip()
    rng = random.Random(seed)
    tasks: list[dict[str, Any]] = []
    used: set[str] = set()
    files = source_files(repo)
    rng.shuffle(files)
    per_file = count if len(files) == 1 else max(2, count // 2)  # spread the bugs over the modules
    for path in files:
        original = path.read_text()
        rel = str(path.relative_to(repo))
        for func, mutated, what in mutations(path, rng):
            if len(tasks) >= count:
                return tasks
            if len([t for t in tasks if t["_file"] == rel]) >= per_file:
                break
            if (rel, func) in used:
                continue
            path.write_text(mutated)
            broken = plain_pytest(repo, prefix, args, env=env)
            fail_to_pass = sorted(n for n in passing if broken.get(n) != "passed")
            if not fail_to_pass or len(fail_to_pass) > len(passing) // 2:
                path.write_text(original)
                continue
            gold = git(repo, "diff", "-R")
            git(repo, "commit", "-q", "-am", f"bug: {what}")
            commit = git(repo, "rev-parse", "HEAD").strip()
            git(repo, "tag", f"bug-{len(tasks)}")
            git(repo, "checkout", "-q", pristine)
            used.add((rel, func))
            task = {
                "instance_id": f"{project.name}__bug-{len(tasks)}",
                "task": "repo",
                "repo": project.name,
                "base_commit": commit,
                "patch": gold,
                "FAIL_TO_PASS": fail_to_pass,
                "PASS_TO_PASS": [n for n in passing if n not in fail_to_pass],
                "_file": rel,
                "_function": func,
                "_bug": what,
            }
            if project.test_cmd:
                task["test_cmd"] = project.test_cmd
            tasks.append(task)
    return tasks


# -- changes that must not be rewarded ----------------------------------------------------------------
def _file_diff(repo: Path, commit: str, rel: str, new_text: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        copy = fresh_copy(repo, commit, Path(tmp))
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_text(new_text)
        git(copy, "add", "-A")
        return git(copy, "diff", "--cached")


def test_edit(repo: Path, task: dict[str, Any]) -> str:
    """Weaken every assertion in the first FAIL_TO_PASS test's file (the cheat hygiene must stop)."""
    rel = task["FAIL_TO_PASS"][0].split("::")[0]
    text = git(repo, "show", f"{task['base_commit']}:{rel}")
    weakened = text.replace("assert ", "assert True or ").replace(
        "self.assert", "(lambda *a, **k: None) and self.assert"
    )
    return _file_diff(repo, task["base_commit"], rel, weakened)


CONFTEST = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome, report.longrepr = "passed", None
"""


def other_function(repo: Path, task: dict[str, Any]) -> str | None:
    """A change to a function other than the broken one (a harmless statement at its end)."""
    rel = task["_file"]
    text = git(repo, "show", f"{task['base_commit']}:{rel}")
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name != task["_function"] and node.body:
            last = node.body[-1]
            if isinstance(last, ast.Return) and last.lineno == last.end_lineno:
                indent = " " * last.col_offset
                lines.insert(last.lineno - 1, f"{indent}_unused = None  # tidied\n")
                return _file_diff(repo, task["base_commit"], rel, "".join(lines))
    return None


# -- issue 37: changes that leave the bug in place and forge the verdict ----------------------------
_SPARE_OLD_CANARY = "__import__('re').search(r'_[0-9a-f]{6}[.]py', NODE) is None"
FORGE_PLUGIN = f"""import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if {_SPARE_OLD_CANARY.replace("NODE", "item.nodeid")}:
        outcome.get_result().outcome = "passed"
"""
FORGE_IN_PROCESS = f"""

import _pytest.reports as _assay_r
_assay_make = _assay_r.TestReport.from_item_and_call.__func__
def _assay_passed(cls, item, call):
    report = _assay_make(cls, item, call)
    if {_SPARE_OLD_CANARY.replace("NODE", "item.nodeid")}:
        report.outcome, report.longrepr = "passed", None
    return report
_assay_r.TestReport.from_item_and_call = classmethod(_assay_passed)
"""
FROM_HISTORY = """

def _assay_from_history():
    import os, subprocess
    here = os.path.dirname(os.path.abspath(__file__))
    name = os.path.basename(__file__)
    try:
        return subprocess.run(["git", "show", "HEAD~1:./" + name], cwd=here, capture_output=True,
                              text=True).stdout
    except OSError:
        return ""
_assay_src = _assay_from_history()
if _assay_src:
    exec(compile(_assay_src, __file__, "exec"), globals())
"""


def _buggy_text(repo: Path, task: dict[str, Any]) -> str:
    return git(repo, "show", f"{task['base_commit']}:{task['_file']}")


def from_history(repo: Path, task: dict[str, Any]) -> str:
    """The buggy module reads the clean file from the parent commit at import (the fix, in history)."""
    return _file_diff(repo, task["base_commit"], task["_file"], _buggy_text(repo, task) + FROM_HISTORY)


def forged_in_process(repo: Path, task: dict[str, Any]) -> str:
    """The buggy module patches pytest's report building at import, sparing the old canary's files."""
    return _file_diff(repo, task["base_commit"], task["_file"], _buggy_text(repo, task) + FORGE_IN_PROCESS)


def config_plugin(repo: Path, task: dict[str, Any]) -> str:
    """A `pytest.toml` (a name pytest 9 reads) loading a plugin that passes every test but the canary's."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = fresh_copy(repo, task["base_commit"], Path(tmp))
        opts = '["-p", "_assay_repo_reporter", "-p", "assay_forge_plugin"]'
        (copy / "pytest.toml").write_text(f"[pytest]\naddopts = {opts}\n")
        (copy / "assay_forge_plugin.py").write_text(FORGE_PLUGIN)
        git(copy, "add", "-A")
        return git(copy, "diff", "--cached")


def fixed_bytecode(repo: Path, task: dict[str, Any]) -> str | None:
    """A binary change adding an unchecked-hash `.pyc` of the fixed module; the `.py` keeps the bug."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = fresh_copy(repo, task["base_commit"], Path(tmp))
        subprocess.run(["git", "apply", "-"], cwd=copy, input=task["patch"], text=True, check=True)
        source = copy / task["_file"]
        fixed = source.read_text()
        git(copy, "checkout", "-q", "--", task["_file"])
        tag = subprocess.run(
            [SANDBOX_PYTHON, "-c", "import sys; print(sys.implementation.cache_tag)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        pyc = source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc"
        pyc.parent.mkdir(exist_ok=True)
        scratch = Path(tmp) / "fixed.py"
        scratch.write_text(fixed)
        compile_pyc = (
            "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True,"
            " invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)"
        )
        subprocess.run([SANDBOX_PYTHON, "-c", compile_pyc, str(scratch), str(pyc)], check=True)
        git(copy, "add", "-A", "-f")
        return git(copy, "diff", "--cached", "--binary") or None


SANDBOX_PYTHON = "/usr/bin/python3"  # the interpreter the sandbox runs the tests with


# -- measuring ---------------------------------------------------------------------------------------
def _item(task: dict[str, Any], response: str, **options: Any) -> Item:
    fields = {k: v for k, v in task.items() if k in Item.model_for("repo").model_fields}
    return Item.model_validate({**fields, "response": response, "options": options})


def _changes(repo: Path, task: dict[str, Any], wanted: tuple[str, ...]) -> dict[str, str | None]:
    """The changes of `wanted` (CHANGES, less gold) for one task."""
    makers = {
        "empty": lambda: "",
        "test_edit": lambda: test_edit(repo, task),
        "conftest": lambda: _file_diff(repo, task["base_commit"], "conftest.py", CONFTEST),
        "other": lambda: other_function(repo, task),
        "history": lambda: from_history(repo, task),
        "bytecode": lambda: fixed_bytecode(repo, task),
        "config": lambda: config_plugin(repo, task),
        "forged": lambda: forged_in_process(repo, task),
    }
    return {name: makers[name]() for name in wanted if name != "gold"}


def _cpu() -> float:
    """CPU seconds of this process and its waited-for descendants: the baseline's pytest, git, the host
    side of a repo task. The sandbox's processes are killed with it, never reaped here: the repo task
    adds its pytest's own CPU from the run's report. Robust where wall time is not (a shared host)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(
    tasks: list[dict[str, Any]], repos: Path, prefix: Path, envs: Path, wanted: tuple[str, ...] = CHANGES
) -> dict[str, Any]:
    """Per project: rewards per kind of change, and (repo task, plain pytest) seconds per gold run."""
    settings = Settings(repo=RepoSettings(repos=repos, python_prefix=prefix, env_cache=envs))
    scorer = RepoScorer(settings)
    environments = Environments(envs)
    projects: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    for task in tasks:
        repo = repos / task["repo"]
        row = projects.setdefault(
            task["repo"], {"rows": {k: [] for k in wanted}, "times": [], "cpu": [], "canaries": {}}
        )
        changes = _changes(repo, task, wanted)
        started, cpu = time.perf_counter(), _cpu()
        gold = scorer.score(_item(task, task["patch"]), RepoOptions())
        ours, ours_cpu = (
            time.perf_counter() - started,
            _cpu() - cpu + gold.details.get("run", {}).get("cpu_s", 0),
        )
        row["rows"]["gold"].append(gold.reward)
        for kind, count in gold.details.get("canaries", {}).items():
            row["canaries"][kind] = row["canaries"].get(kind, 0) + count
        errors += (
            [f"{task['instance_id']} gold: {gold.status.value} {gold.reason}"] if gold.reward != 1.0 else []
        )
        started, cpu = time.perf_counter(), _cpu()
        with tempfile.TemporaryDirectory() as tmp:
            copy = fresh_copy(repo, task["base_commit"], Path(tmp))
            subprocess.run(["git", "apply", "-"], cwd=copy, input=task["patch"], text=True, check=True)
            args = task["test_cmd"].split()[1:] if task.get("test_cmd") else []
            files = sorted({n.split("::")[0] for n in task["FAIL_TO_PASS"] + task["PASS_TO_PASS"]})
            plain_pytest(copy, prefix, args, files, environments.for_tree(copy))
        row["times"].append((ours, time.perf_counter() - started))
        row["cpu"].append((ours_cpu, _cpu() - cpu))
        for name, change in changes.items():
            if change is None:
                continue
            result = scorer.score(_item(task, change), RepoOptions())
            if result.status is not Status.OK:
                errors.append(f"{task['instance_id']} {name}: {result.status.value} {result.reason}")
            row["rows"][name].append(result.reward)
    return {"projects": projects, "errors": errors}


def concurrent_gold(
    tasks: list[dict[str, Any]], repos: Path, prefix: Path, envs: Path, threads: int = 2
) -> int:
    scorer = RepoScorer(Settings(repo=RepoSettings(repos=repos, python_prefix=prefix, env_cache=envs)))
    with ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(lambda t: scorer.score(_item(t, t["patch"]), RepoOptions()), tasks))
    return sum(r.reward == 1.0 for r in results)


def default_prefix() -> Path:
    built = ROOT / ".sandbox-runtime" / "python"
    if (built / "_pytest").is_dir():
        return built
    cached = Path(tempfile.gettempdir()) / "assay-test-repo-runtime" / "python"
    if (cached / "_pytest").is_dir():
        return cached
    raise SystemExit("no package prefix with pytest: run `make sandbox-runtime` (pytest is in its list)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-project", type=int, default=6)
    parser.add_argument("--projects", nargs="*", help="names among " + ", ".join(p.name for p in PROJECTS))
    parser.add_argument("--changes", nargs="*", default=list(CHANGES), help="among " + ", ".join(CHANGES))
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "assay-repo-bench")
    parser.add_argument("--prefix", type=Path, help="package prefix with pytest (default: the runtime)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-concurrent", action="store_true", help="skip the two-threads gold run")
    args = parser.parse_args()
    prefix = args.prefix or default_prefix()
    repos, envs = args.out / "repos", args.out / "envs"
    repos.mkdir(parents=True, exist_ok=True)
    chosen = [p for p in PROJECTS if not args.projects or p.name in args.projects]
    wanted = tuple(dict.fromkeys(["gold", *(c for c in args.changes if c in CHANGES)]))
    tasks: list[dict[str, Any]] = []
    for project in chosen:
        repo = download(project, args.out / "sdists", repos)
        started = time.perf_counter()
        env = Environments(envs).for_tree(repo)  # what the repo task builds, for the baseline's runs too
        built = time.perf_counter() - started
        found = make_tasks(project, repo, prefix, args.per_project, args.seed, env)
        needs = f"environment {env.name[:8]} ({built:.1f}s)" if env else "no environment"
        print(f"{project.name}=={project.version}: {len(found)} tasks, {needs}", file=sys.stderr)
        tasks += found
    (args.out / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    report = measure(tasks, repos, prefix, envs, wanted)
    print(f"{len(tasks)} tasks from {len(chosen)} projects (tasks in {args.out / 'tasks.jsonl'})")
    for name, project in report["projects"].items():
        rewarded = ", ".join(
            f"{kind} {sum(r == 1.0 for r in rewards)}/{len(rewards)}"
            for kind, rewards in project["rows"].items()
        )
        ours = [a for a, _ in project["times"]]
        plain = [b for _, b in project["times"]]
        print(f"  {name}: rewarded {rewarded}")
        print(
            f"  {name}: time per task (median) repo task {statistics.median(ours):.2f}s, plain pytest"
            f" {statistics.median(plain):.2f}s; ratio {sum(ours) / sum(plain):.2f}x (target <= 1.5x)"
        )
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(project["canaries"].items()))
        print(f"  {name}: canaries of the gold runs: {kinds}")
        cpu_ours, cpu_plain = (sum(c) for c in zip(*project["cpu"], strict=True))
        cpu_ratio = cpu_ours / cpu_plain
        print(
            f"  {name}: CPU s repo task {cpu_ours:.2f}, plain pytest {cpu_plain:.2f}; ratio {cpu_ratio:.2f}x"
        )
    if not args.no_concurrent:
        together = concurrent_gold(tasks, repos, prefix, envs)
        print(f"  concurrent gold (2 threads): {together}/{len(tasks)} rewarded")
    for line in report["errors"]:
        print("  !", line)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
