"""Languages the sandbox runs: where the source goes, how it compiles, how a test runs.

Python runs in the warm interpreter (fork, no exec); the others exec a toolchain found on the host under
/usr (the only system tree mounted in the sandbox). A language whose toolchain is missing is reported as
unavailable, so an item in it is `invalid` with a reason rather than a wrong answer.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

BUILD_DIR = "/tmp/build"
RUN_DIR = "/tmp/run"


@dataclass(frozen=True)
class Language:
    name: str
    aliases: tuple[str, ...]  # fence tags and request names
    source_name: str
    tool: str | None  # the executable that must exist for the language to be available
    compile_argv: tuple[str, ...] = ()
    address_space: bool = True
    compile_env: tuple[tuple[str, str], ...] = ()  # added to the compiler's environment

    @property
    def compiled(self) -> bool:
        return bool(self.compile_argv)

    def available(self) -> bool:
        return self.tool is None or resolve(self.tool) is not None

    def source_file(self, source: str) -> str:
        if self.name == "java":
            return f"{java_class(source)}.java"
        return self.source_name

    def compile_command(self, source: str) -> list[str]:
        argv = [a.replace("{src}", self.source_file(source)) for a in self.compile_argv]
        tool = resolve(argv[0]) or argv[0]
        return [tool, *argv[1:]]

    def run_command(self, source: str, memory_mb: int) -> list[str] | None:
        """argv of one test, or None for Python (run inside the warm interpreter)."""
        if self.name in ("cpp", "rust", "go"):
            return [f"{BUILD_DIR}/main"]
        if self.name == "javascript":
            heap = max(16, memory_mb - 64)
            return [
                resolve("node") or "/usr/bin/node",
                f"--max-old-space-size={heap}",
                f"{BUILD_DIR}/main.js",
            ]
        if self.name == "java":
            heap = max(32, memory_mb - 96)
            return [
                resolve("java") or "/usr/bin/java",
                f"-Xmx{heap}m",
                "-Xss64m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Xshare:auto",
                "-cp",
                BUILD_DIR,
                java_class(source),
            ]
        return None


_RESOLVED: dict[str, str] = {}  # tools found once stay found; a missing one is looked for again


def resolve(tool: str) -> str | None:
    """The real path of a tool under /usr (what the sandbox can see), or None."""
    if tool in _RESOLVED:
        return _RESOLVED[tool]
    found = shutil.which(tool, path="/usr/bin:/bin") if not os.path.isabs(tool) else tool
    if found is None:
        return None
    real = os.path.realpath(found)
    if not (real.startswith("/usr/") and os.access(real, os.X_OK)):
        return None
    _RESOLVED[tool] = real
    return real


def java_class(source: str) -> str:
    match = re.search(r"public\s+(?:final\s+|abstract\s+)*class\s+([A-Za-z_]\w*)", source)
    return match.group(1) if match else "Main"


PYTHON = Language("python", ("python", "python3", "py", "py3"), "main.py", "python3")
CPP = Language(
    "cpp",
    ("cpp", "c++", "cc", "cxx", "c++17", "cpp17"),
    "main.cpp",
    "g++",
    ("g++", "-std=c++17", "-O2", "-pipe", "-o", "main", "{src}"),
)
JAVASCRIPT = Language(
    "javascript", ("javascript", "js", "node", "nodejs"), "main.js", "node", address_space=False
)
JAVA = Language(
    "java",
    ("java",),
    "Main.java",
    "javac",
    ("javac", "-J-Xmx384m", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-encoding", "UTF-8", "{src}"),
    address_space=False,
)
RUST = Language(
    "rust",
    ("rust", "rs"),
    "main.rs",
    "rustc",
    ("rustc", "--edition", "2021", "-O", "-o", "main", "{src}"),
)
# Go's runtime reserves far more address space than it uses: bounded by the cgroup, not RLIMIT_AS. No cgo
# (no C compiler run per build); the build cache lives in the slot's /tmp and goes with it.
GO = Language(
    "go",
    ("go", "golang"),
    "main.go",
    "go",
    ("go", "build", "-o", "main", "{src}"),
    address_space=False,
    compile_env=(("CGO_ENABLED", "0"), ("GOCACHE", "/tmp/.gocache"), ("GOPATH", "/tmp/.gopath")),
)
LANGUAGES: dict[str, Language] = {
    alias: lang for lang in (PYTHON, CPP, JAVASCRIPT, JAVA, RUST, GO) for alias in (lang.name, *lang.aliases)
}


def lookup(name: str | None) -> Language | None:
    return LANGUAGES.get((name or "python").strip().lower())


def language_pattern() -> str:
    """A JSON-schema pattern of the names `lookup` accepts (any case, spaces around), for /run_code's
    documented schema: a request the schema allows is one the server accepts."""

    def any_case(name: str) -> str:
        return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in name)

    names = "|".join(any_case(name) for name in sorted(LANGUAGES, key=len, reverse=True))
    return rf"^$|^\s*({names})\s*$"  # "" reads as python


def language_names() -> list[str]:
    """The languages the sandbox knows (whether or not this host has their toolchain)."""
    return list(dict.fromkeys(lang.name for lang in LANGUAGES.values()))
