"""`assay sandbox-runtime`: build the package prefix that sandboxed Python programs import from.

Without one, sandboxed Python has the standard library only, and a correct program that imports numpy
scores as a `runtime_error`: a false negative the user never sees (issue 31). The prefix is installed
by pip for the sandbox's own interpreter (`/usr/bin/python3`, its version, binary wheels only) into a
directory of its own, never into the server's environment, and mounted read-only into each sandbox.

Where: `--target DIR`, else the user's cache (`$XDG_CACHE_HOME/assay/sandbox-runtime/python3.X`; for
root `/var/cache/assay/...`), which every surface uses when `code.python_prefix` is unset. A `.built`
marker holding the package list is written last, so an interrupted build is never taken for a finished
one, and a runtime built from an older package list is rebuilt by the next `assay sandbox-runtime` (the
server still mounts it meanwhile).
`make sandbox-runtime` builds here too and links `.sandbox-runtime/python` to it: one location.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

SANDBOX_PYTHON = "/usr/bin/python3"
MARKER = ".built"


def packages_file() -> Path:
    """The pinned package list shipped with Assay (numpy, scipy, pandas, sympy, networkx, ...)."""
    return Path(str(resources.files("assay.sandbox") / "runtime-packages.txt"))


@functools.cache
def sandbox_python_version(python: str = SANDBOX_PYTHON) -> str:
    """`3.11` for the interpreter the sandbox runs (the wheels must match it, not the server's)."""
    done = subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.strip()


SYSTEM_CACHE = Path("/var/cache")


def cache_root() -> Path:
    """`assay/` in the user's cache, or for root the system's (`/var/cache`), since a server run as root
    drops each sandbox to an unprivileged uid, which cannot enter root's private home (bwrap then fails
    to mount what is there and every slot dies; measured here). `XDG_CACHE_HOME`, when set, wins."""
    cache_home = os.environ.get("XDG_CACHE_HOME")
    if cache_home:
        cache = Path(cache_home)
    elif os.geteuid() == 0:
        cache = SYSTEM_CACHE
    else:
        cache = Path.home() / ".cache"
    return cache / "assay"


def default_target(version: str | None = None) -> Path:
    """The cache directory the code task looks in when `code.python_prefix` is unset (`cache_root`)."""
    return cache_root() / "sandbox-runtime" / f"python{version or sandbox_python_version()}"


def is_built(target: Path) -> bool:
    return (target / MARKER).is_file()


def is_current(target: Path, requirements: Path) -> bool:
    """Built from this very package list: a runtime built from an older list is rebuilt, not kept (the
    marker holds the list it was built from)."""
    marker = target / MARKER
    return marker.is_file() and marker.read_text() == requirements.read_text()


def build_command(target: Path, version: str, requirements: Path) -> list[str]:
    """pip for another interpreter's version: `--target` with binary wheels only (pip's rule for
    `--python-version`), so nothing compiles against the server's Python."""
    return [
        sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-warn-script-location",
        "--only-binary=:all:", "--python-version", version, "--target", str(target), "-r", str(requirements),
    ]  # fmt: skip


def build(target: Path, *, force: bool = False, requirements: Path | None = None) -> Path:
    """Build the prefix at `target` (pip's progress on stderr); a finished one is kept unless `force`."""
    requirements = requirements or packages_file()
    if is_current(target, requirements) and not force:
        return target
    version = sandbox_python_version()
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    # fd 2 itself: pip's progress goes where ours does, also when sys.stderr is not a real file
    done = subprocess.run(build_command(partial, version, requirements), stdout=2, check=False)
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise RuntimeError(f"pip could not install the sandbox packages (exit {done.returncode}); see above")
    (partial / MARKER).write_text(requirements.read_text())
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="assay sandbox-runtime",
        description="Build the packages sandboxed Python programs may import (numpy, scipy, pandas, ...).",
    )
    parser.add_argument("--target", type=Path, help="directory to build into (default: the user cache)")
    parser.add_argument("--force", action="store_true", help="rebuild even if already built")
    parser.add_argument("--print-path", action="store_true", help="print where it goes and exit")
    args = parser.parse_args(argv)
    target = (args.target or default_target()).expanduser().absolute()
    if args.print_path:
        print(target)
        return 0
    if is_current(target, packages_file()) and not args.force:
        print(f"assay sandbox-runtime: already built at {target} (--force rebuilds)", file=sys.stderr)
    else:
        print(f"assay sandbox-runtime: installing {packages_file().name} into {target}", file=sys.stderr)
        try:
            build(target, force=args.force)
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            print(f"assay sandbox-runtime: {exc}", file=sys.stderr)
            return 1
    default = args.target is None or target == default_target()
    hint = "used by default" if default else f"use it with ASSAY_CODE__PYTHON_PREFIX={target}"
    print(f"assay sandbox-runtime: ready at {target} ({hint})", file=sys.stderr)
    return 0
