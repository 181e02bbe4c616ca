"""The README and the manual in docs/ stay true: every ```bash and ```python block of each runs as
written, the settings table (docs/configuration.md) matches Settings, the quick start is the Makefile's.

The blocks run in a scratch directory that holds `examples/` and `.venv` (links into this checkout),
with the environment's `bin` on PATH as after `source .venv/bin/activate`, against `assay serve`
started here on a free port, never 8000 (that port belongs to the user's own `assay serve`, and to
another engineer's on a shared machine): the blocks' `127.0.0.1:8000` and `localhost:8000` are rewritten
to it, and `ASSAY_URL` points at it, the one change made.
A block preceded by `<!-- readme: not-run (reason) -->` is skipped.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from assay_testing import DEMO_COMMAND, free_port, user_shell_env

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The front door and every page of the manual; their blocks run in the same scratch directory.
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
CONFIGURATION = ROOT / "docs" / "configuration.md"
NOT_RUN = re.compile(r"^<!-- readme: not-run \(.+\) -->$")
FENCE = re.compile(r"^```(\w*)\s*$")
README_URLS = ("127.0.0.1:8000", "localhost:8000")
# Blocks that take minutes (a training run, a bench over two verifiers) run with the slow tests.
SLOW = ("assay train", "assay bench")
PRINTED = re.compile(r"^\s*print\(.*\)  # (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Block:
    page: str  # the file, relative to the checkout
    language: str
    line: int  # 1-based line of the opening fence
    code: str
    run: bool


def readme_blocks(
    text: str, page: str = "README.md", languages: tuple[str, ...] = ("bash", "python")
) -> list[Block]:
    """The fenced blocks of `languages` (```bash and ```python: the ones that run), each marked whether
    it runs."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        if opening.group(1) in languages:
            code = "\n".join(lines[i + 1 : end]) + "\n"
            blocks.append(Block(page, opening.group(1), i + 1, code, not NOT_RUN.match(previous.strip())))
        i = end + 1
    return blocks


BLOCKS = [b for page in PAGES for b in readme_blocks(page.read_text(), str(page.relative_to(ROOT)))]


def _params() -> Iterator[object]:
    for block in BLOCKS:
        if not block.run:
            continue
        first = block.code.strip().splitlines()[0][:40]
        marks = [pytest.mark.slow] if any(word in block.code for word in SLOW) else []
        yield pytest.param(block, id=f"{block.page}:{block.line}-{block.language}: {first}", marks=marks)


@dataclass
class Scratch:
    directory: Path
    env: dict[str, str]
    address: str  # host:port of the server the blocks talk to


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scratch]:
    directory = tmp_path_factory.mktemp("readme")
    (directory / "examples").symlink_to(ROOT / "examples")
    (directory / ".venv").symlink_to(Path(sys.prefix))
    (directory / ".sandbox-runtime").symlink_to(ROOT / ".sandbox-runtime")  # what `make serve` builds
    env = user_shell_env()
    env["ASSAY_WORKERS"] = "2"
    port = free_port()
    env["ASSAY_URL"] = f"http://127.0.0.1:{port}"  # clients that take the default URL
    log = (directory / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "assay.cli", "serve", "--port", str(port)],
        env=env,
        cwd=directory,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_ready(f"http://127.0.0.1:{port}", server, directory / "serve.log")
        yield Scratch(directory, env, f"127.0.0.1:{port}")
    finally:
        server.terminate()
        server.wait(60)
        log.close()


def _wait_ready(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    pause = threading.Event()
    with httpx.Client(base_url=url, timeout=10) as http:
        for _ in range(1200):  # bounded: 120 s for start-up and warm-up
            try:
                if http.get("/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                assert server.poll() is None, f"assay serve exited:\n{log.read_text()}"
            pause.wait(0.1)
    raise AssertionError(f"assay serve never became ready:\n{log.read_text()}")


def _command_of(block: Block) -> str:
    """The block's one command without its comment, or "" for a block of several lines."""
    lines = [line for line in block.code.splitlines() if line.strip()]
    return lines[0].split("  #", 1)[0].strip() if len(lines) == 1 else ""


@pytest.mark.parametrize("block", list(_params()))
def test_the_readme_block_runs_as_written(
    block: Block, scratch: Scratch, request: pytest.FixtureRequest
) -> None:
    code = block.code
    for url in README_URLS:
        code = code.replace(url, scratch.address)
    command = ["bash", "-euo", "pipefail", "-c", code] if block.language == "bash" else [sys.executable]
    if _command_of(block) == DEMO_COMMAND:  # the suite's one demo run (conftest's `demo_run`) is this block
        done = request.getfixturevalue("demo_run")[1]
    else:
        done = subprocess.run(
            command,
            input=code if block.language == "python" else None,
            capture_output=True,
            text=True,
            cwd=scratch.directory,
            env=scratch.env,
            timeout=900,
            check=False,
        )
    assert done.returncode == 0, f"{block.page} line {block.line}:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    assert '{"error":' not in done.stdout, done.stdout  # an HTTP error body from a curl
    if block.language == "python":  # `print(x)  # shown` : what the README shows is what it prints
        shown = set(PRINTED.findall(block.code))
        assert set(done.stdout.splitlines()) == shown, done.stdout


def test_the_readme_server_never_takes_the_default_port(scratch: Scratch) -> None:
    # It took 8000 whenever that was free, the port a user's own `assay serve` binds (issue 31).
    assert not scratch.address.endswith(":8000")


def test_the_not_run_marker_needs_a_reason() -> None:
    for page in PAGES:
        for line in page.read_text().splitlines():
            if line.startswith("<!-- readme:"):
                assert NOT_RUN.match(line.strip()), f"{page.name}: {line}"


def test_every_file_the_readme_runs_on_is_shipped() -> None:
    for block in BLOCKS:
        if block.run:
            for name in re.findall(r"examples/[\w./-]+", block.code):
                assert (ROOT / name).exists(), name  # a file, or a run directory


def test_the_example_items_are_valid_json_lines() -> None:
    for path in (ROOT / "examples").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            assert isinstance(json.loads(line), dict), path


def _table_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("settings_table", ROOT / "scripts" / "settings_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_settings_table_matches_the_settings() -> None:
    assert _table_module().table() in CONFIGURATION.read_text(), (
        "run: python scripts/settings_table.py --write"
    )


def test_the_front_door_is_short_and_links_every_page() -> None:
    readme = README.read_text()
    assert len(readme.encode()) <= 8 * 1024, "the README is the front door: move detail into docs/"
    for page in PAGES[1:]:
        assert f"(docs/{page.name})" in readme, f"README links no docs/{page.name}"


def test_the_quick_start_is_make_serve_and_make_test() -> None:
    readme = README.read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "make serve" in readme and "make test" in readme
    assert "\nserve:" in makefile and "\ntest:" in makefile
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("make test")


OUTPUT_OPTION = re.compile(r"(?:^|\s)(?:-o|--out|--keep)\s+([^\s\"'$|;#]+)")


def _written_by_the_docs() -> set[str]:
    """What the pages' `assay ...` commands write with -o/--out/--keep, shown (```text) or run alike."""
    paths = set()
    for page in PAGES:
        for block in readme_blocks(page.read_text(encoding="utf-8"), languages=("bash", "sh", "text")):
            for line in block.code.splitlines():
                if line.lstrip().startswith("assay "):
                    paths.update(
                        p for p in OUTPUT_OPTION.findall(line) if p[0] not in "/-" and not p.isupper()
                    )
    return paths


def test_what_the_readme_commands_write_is_ignored_by_git() -> None:
    # Every -o/--out/--keep of the pages' commands (issue 43: report.jsonl, validation/, audit-report/ ...
    # were not ignored), plus `--init run1` and the demos' default out/.
    derived = _written_by_the_docs()
    assert {"results.jsonl", "report.jsonl", "runs/demo", "audit-report"} <= derived  # the parser reads them
    # A folder is checked through a file in it: git cannot tell that a path that does not exist is one.
    files = {p if Path(p).suffix else p.rstrip("/") + "/log.jsonl" for p in derived}
    written = sorted({*files, "run1/run.yaml", "out/log.jsonl"})
    tracked = ["src/assay/bench/report.py", "tests/bench/conftest.py", "examples/items.jsonl"]
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", *written, *tracked],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert sorted(done.stdout.split()) == written


def test_the_extras_table_and_the_test_install_match_pyproject_and_the_makefile() -> None:
    """Issue 43: the tutorial's extras table once lacked `validate`, the extra a Quick start line needs."""
    import tomllib

    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    tutorial = (ROOT / "docs" / "tutorial.md").read_text()
    tabled = set(re.findall(r"^\| `([a-z][a-z-]*)` \|", tutorial, re.MULTILINE))
    assert tabled == extras - {"dev"}, "every user-facing extra has a row in docs/tutorial.md"
    (made,) = re.findall(r"^TEST_EXTRAS := (\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert f"the Python extras `{made}`" in tutorial


def test_the_readme_trains_with_the_suites_demo_command() -> None:
    """The suite's one demo run stands for the README's training block only while they are the same words."""
    readme = [b for b in BLOCKS if b.page == "README.md" and b.run]
    assert DEMO_COMMAND in {_command_of(b) for b in readme}


@pytest.mark.slow
def test_the_demo_numbers_in_the_training_docs_are_what_the_demo_gives(
    demo_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """docs/training.md quotes the demo run per CPU vector unit; this holds the row of this machine's unit
    to the run the README block makes (issue 43: docs numbers went stale silently). The CI machine once
    lacked AVX-512 and its run ended at 0.374 -> 0.69, exactly what `ATEN_CPU_CAPABILITY=avx2` gives here.
    Tolerances allow another library path within one unit (another vendor's GEMM), not another result."""
    out, done = demo_run
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    text = (ROOT / "docs" / "training.md").read_text()
    rows = re.findall(r"^\| ([A-Z0-9_]+) \| (\d\.\d+) -> (\d\.\d+) \| (\d+) \| (\d+) \|$", text, re.MULTILINE)
    table = {unit: (float(before), float(after), int(sft), int(rl)) for unit, before, after, sft, rl in rows}
    assert {"AVX512", "AVX2"} <= set(table), "the docs quote a run for each x86 unit CI may have"
    unit = summary["cpu_capability"]
    assert unit in table, f"docs/training.md has no row for {unit}: add this run's, {summary}"
    before, after, _, steps = table[unit]
    assert summary["steps"] == steps and summary["stopped_by"] == "steps"
    assert abs(summary["accuracy_before"] - before) <= 0.03, summary
    assert abs(summary["accuracy_after"] - after) <= 0.08, summary
