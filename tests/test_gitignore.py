"""What the README's and docs' commands write into the checkout is ignored by git (issue 43 item 10): a new
user who runs the Quick start must not find a dozen untracked files in `git status`."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# An `assay ...` command's output options: -o FILE, --out DIR, --keep FILE.
OUTPUT = re.compile(r"^\s*assay [a-z-]+\b.*?$", re.M)
OPTION = re.compile(r"(?:^|\s)(?:-o|--out|--keep)\s+([^\s\"'$|;#]+)")


def _shell_blocks(text: str) -> list[str]:
    """The bodies of fenced shell (and `text`: commands shown, not run) blocks, fences paired in order."""
    blocks, body, lang = [], [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if lang is None:
                lang = line[3:].strip()
                continue
            if lang in ("bash", "sh", "console", "text"):
                blocks.append("\n".join(body))
            body, lang = [], None
        elif lang is not None:
            body.append(line)
    return blocks


def _written_paths() -> set[str]:
    paths: set[str] = set()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in _shell_blocks(page.read_text(encoding="utf-8")):
            for line in OUTPUT.findall(block):
                for path in OPTION.findall(line):
                    if (
                        not path.startswith(("/", "-")) and path.upper() != path
                    ):  # not /dev/null, DIR, RUN_DIR
                        paths.add(path)
    return paths


def _ignored(path: str, patterns: list[str]) -> bool:
    """Anchored patterns only (`/name`, `/dir/`), the form the checkout's .gitignore uses for outputs."""
    first, _, rest = path.strip("/").partition("/")
    return f"/{first}/" in patterns or (not rest and f"/{first}" in patterns)


def test_every_output_the_docs_commands_write_is_ignored() -> None:
    patterns = [line.strip() for line in (ROOT / ".gitignore").read_text().splitlines()]
    paths = _written_paths()
    assert {"results.jsonl", "report.jsonl", "runs/demo"} <= paths  # the parser reads the Quick start
    assert sorted(p for p in paths if not _ignored(p, patterns)) == []
