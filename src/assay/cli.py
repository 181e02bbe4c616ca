"""The `assay` command: serve | score | bench | train | doctor | validate | audit | repo-preflight |
sandbox-runtime | new-task.

`assay score` reads JSON Lines items (a file or `-`), writes JSON Lines results in the same order, shows
progress on stderr and ends with a summary line. A line that is not JSON gets an `invalid` result of its
own; it never stops the run. With `--group-by FIELD`, items sharing a value of FIELD are scored as one
group (as POST /v1/groups) and each group's statistics go to `--group-stats` (default: stderr); a FIELD
that is not an item field is taken off the item before scoring. `--shaping JSON` or `--rubric JSON` gives
every group that option (docs/length-control.md); items may carry `length`, `exit_position`, `tool_calls`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import IO, TYPE_CHECKING, Any

from pydantic import ValidationError

from assay import __version__
from assay.cli_messages import os_error, port_in_use, settings_error
from assay.errors import AssayError
from assay.jsonl import read_lines
from assay.settings import Settings
from assay.types import Result, Status

if TYPE_CHECKING:
    from assay.registry import Registry

KEEP_ALIVE_S = 75  # seconds the server keeps an idle connection open


def _read_items(stream: IO[str]) -> Iterator[tuple[int, Any]]:
    """(line number, parsed item or a Result for a line that is not JSON); blank lines are skipped."""
    for line in read_lines(stream):
        yield line.number, Result.invalid(line.problem) if line.problem else line.value


def _summary(results: Counter[str], correct: int, reward_sum: float) -> str:
    total = sum(results.values())
    ok = results.get(Status.OK.value, 0)
    parts = ", ".join(f"{status}={results.get(status.value, 0)}" for status in Status)
    mean = reward_sum / ok if ok else 0.0
    return f"scored {total} items: {parts}; correct={correct}; mean reward over ok={mean:.4f}"


def _json_object(text: str) -> dict[str, Any]:
    """An argument that is a JSON object (a group's shaping or rubric option)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {text}")
    return value


def _score(args: argparse.Namespace) -> int:
    if args.shaping is not None or args.rubric is not None:
        from assay.groups.shaping import parse_options

        if args.group_by is None:
            raise AssayError("--shaping and --rubric shape groups: give --group-by FIELD too")
        parse_options(0, {"shaping": args.shaping, "rubric": args.rubric})  # a bad option fails here
    if args.group_by is not None:
        return _score_grouped(args)
    from tqdm import tqdm

    from assay.engine.scoring import Engine

    settings = Settings()
    counts: Counter[str] = Counter()
    correct = 0
    reward_sum = 0.0
    with ExitStack() as stack:
        source = sys.stdin if args.file == "-" else stack.enter_context(open(args.file, encoding="utf-8"))
        sink = (
            sys.stdout
            if args.output == "-"
            else stack.enter_context(open(args.output, "w", encoding="utf-8"))
        )
        engine = stack.enter_context(Engine(settings))
        lines = list(_read_items(source))
        progress = stack.enter_context(
            tqdm(total=len(lines), unit="item", file=sys.stderr, disable=args.quiet)
        )
        for start in range(0, len(lines), args.chunk_size):
            chunk = lines[start : start + args.chunk_size]
            to_score = [raw for _, raw in chunk if not isinstance(raw, Result)]
            scored = iter(engine.score(to_score))
            for _, raw in chunk:
                result = raw if isinstance(raw, Result) else next(scored)
                sink.write(result.model_dump_json() + "\n")
                counts[result.status.value] += 1
                correct += result.correct is True
                reward_sum += result.reward or 0.0
            sink.flush()
            progress.update(len(chunk))
    print(_summary(counts, correct, reward_sum), file=sys.stderr)
    return 0


def _group_key(raw: Any, field: str, registry: Registry) -> tuple[Any, Any]:
    """(group value, the item to score): a field that is not one of the item's task's (`Item`'s and the
    task's own) is removed so the item stays valid."""
    if not isinstance(raw, dict):
        return None, raw
    value = raw.get(field)
    kept = field in registry.item_model(raw).model_fields
    item = raw if kept else {k: v for k, v in raw.items() if k != field}
    return (
        value if isinstance(value, str | int | float | bool) or value is None else json.dumps(value)
    ), item


def _score_grouped(args: argparse.Namespace) -> int:
    """`assay score --group-by FIELD`: results in input order, one statistics line per group. A line
    that is not JSON keeps its own `invalid` result and belongs to no group."""
    from assay.engine.scoring import Engine

    with ExitStack() as stack:
        source = sys.stdin if args.file == "-" else stack.enter_context(open(args.file, encoding="utf-8"))
        lines = [raw for _, raw in _read_items(source)]
        engine = stack.enter_context(Engine(Settings()))
        members: dict[Any, list[tuple[int, Any]]] = {}
        for index, raw in enumerate(lines):
            if not isinstance(raw, Result):
                key, item = _group_key(raw, args.group_by, engine.registry)
                members.setdefault(key, []).append((index, item))
        options = {"shaping": args.shaping, "rubric": args.rubric}
        groups = [
            {"id": key, "items": [item for _, item in rows], **options} for key, rows in members.items()
        ]
        outcomes = engine.score_groups(groups)
        results = [raw if isinstance(raw, Result) else None for raw in lines]
        for rows, outcome in zip(members.values(), outcomes, strict=True):
            for (index, _), result in zip(rows, outcome.results, strict=True):
                results[index] = result
        done = [r for r in results if r is not None]
        sink = (
            sys.stdout
            if args.output == "-"
            else stack.enter_context(open(args.output, "w", encoding="utf-8"))
        )
        sink.writelines(r.model_dump_json() + "\n" for r in done)
        stats_sink = (
            sys.stderr
            if args.group_stats is None
            else stack.enter_context(open(args.group_stats, "w", encoding="utf-8"))
        )
        for key, outcome in zip(members, outcomes, strict=True):
            stats_sink.write(json.dumps({"id": key, "stats": outcome.stats.model_dump(mode="json")}) + "\n")
    counts = Counter(r.status.value for r in done)
    print(
        _summary(counts, sum(r.correct is True for r in done), sum(r.reward or 0.0 for r in done)),
        file=sys.stderr,
    )
    return 0


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from assay.api import create_app

    overrides = {
        k: v
        for k, v in (("host", args.host), ("port", args.port), ("workers", args.workers))
        if v is not None
    }
    settings = Settings(**overrides)
    busy = port_in_use(settings.host, settings.port)
    if busy is not None:
        print(f"assay serve: {busy}", file=sys.stderr)
        return 2
    _say_what_sandboxed_python_imports(settings)
    if args.ray or args.address:
        from assay.distributed import serve as serve_on_ray

        return serve_on_ray(settings, args.address)
    _raise_open_files_limit()
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        timeout_graceful_shutdown=settings.drain_s,
        backlog=settings.backlog,
        # Far above the clients' idle expiry (client/http.py KEEPALIVE_S): uvicorn's 5 s default raced
        # a busy trainer's reuse of an idle connection, and a session step sent on a closing connection
        # is lost (a ReadError that cannot be retried: the step may have run).
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    return 0


def _raise_open_files_limit() -> None:
    """The soft limit on open files up to the hard one: each connection is a file, and the usual soft
    limit (1,024) refuses connections long before 10,000 concurrent rollouts (issue 31)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):  # a container may refuse; serve with what there is
            return


def _say_what_sandboxed_python_imports(settings: Settings) -> None:
    """At start, one line when sandboxed Python has the standard library only: a program importing
    numpy then fails, and the user should know before the first reward, not after (issue 31)."""
    from assay.sandbox.runtime import NO_PACKAGES_HINT, check_prefix, prefix_packages

    try:
        packages = prefix_packages(check_prefix(settings.code.python_prefix))
    except ValueError as exc:  # a prefix that is not a directory: the code task says so per item
        print(f"assay serve: {exc}", file=sys.stderr)
        return
    if not packages:
        print(f"assay serve: {NO_PACKAGES_HINT}", file=sys.stderr)


def _delegate(module: str, argv: Sequence[str]) -> int:
    """Sub-commands with their own parsers (bench, train) live in their packages."""
    import importlib

    main = importlib.import_module(module).main
    return int(main(list(argv)))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="assay", description="Verifiers and a reward server for RLVR.")
    parser.add_argument("--version", action="version", version=f"assay {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the HTTP service (settings from ASSAY_* variables)")
    serve.add_argument("--host", help="bind address (default 127.0.0.1, or ASSAY_HOST)")
    serve.add_argument("--port", type=int, help="port (default 8000, or ASSAY_PORT)")
    serve.add_argument("--workers", type=int, help="scoring worker processes (default: CPU count)")
    serve.add_argument(
        "--ray",
        action="store_true",
        help="serve with Ray Serve, one deployment per kind of work (assay[ray])",
    )
    serve.add_argument(
        "--address", help="Ray cluster to join (implies --ray; default ASSAY_RAY__ADDRESS, else a local Ray)"
    )
    serve.set_defaults(run=_serve)

    score = sub.add_parser("score", help="score JSON Lines items in-process")
    score.add_argument("file", help="items as JSON Lines, or - for stdin")
    score.add_argument("-o", "--output", default="-", help="results as JSON Lines (default: stdout)")
    score.add_argument("--chunk-size", type=int, default=512, help="items scored per round")
    score.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    score.add_argument("--group-by", metavar="FIELD", help="score items sharing FIELD's value as a group")
    score.add_argument(
        "--group-stats", metavar="PATH", help="per-group statistics as JSON Lines (default: stderr)"
    )
    score.add_argument(
        "--shaping",
        type=_json_object,
        metavar="JSON",
        help="each group's length shaping (JSON)",
    )
    score.add_argument("--rubric", type=_json_object, metavar="JSON", help="each group's reward rubric")
    score.set_defaults(run=_score)

    sub.add_parser(
        "bench", help="false-negative/false-positive rates of verifiers (assay bench -h)", add_help=False
    )
    sub.add_parser(
        "train", help="GRPO/DAPO client trainer rewarded by Assay (assay train -h)", add_help=False
    )
    sub.add_parser(
        "doctor", help="diagnose RL failure modes of a run directory (assay doctor -h)", add_help=False
    )
    sub.add_parser(
        "validate", help="check tasks are well posed; probe solve rates (assay validate -h)", add_help=False
    )
    sub.add_parser(
        "audit",
        help="reward-hacking probes against the configured verifiers (assay audit -h)",
        add_help=False,
    )
    sub.add_parser(
        "repo-preflight",
        help="check repository tasks: gold passes, empty fails, no flaky test (assay repo-preflight -h)",
        add_help=False,
    )
    sub.add_parser(
        "new-task",
        help="write a working task folder: scorer, tool, probes, tests, page (assay new-task -h)",
        add_help=False,
    )
    sub.add_parser(
        "sandbox-runtime",
        help="build the packages sandboxed Python may import: numpy, scipy, pandas, ... (-h)",
        add_help=False,
    )
    return parser


_DELEGATED = {
    "bench": "assay.bench.command",
    "train": "assay.rl_client.runs.command",
    "doctor": "assay.doctor.command",
    "validate": "assay.validate.command",
    "audit": "assay.audit.command",
    "repo-preflight": "assay.verifiers.repo.command",
    "sandbox-runtime": "assay.sandbox.runtime_build",
    "new-task": "assay.registry.scaffold",
}


# Command line flags that set a Settings field, for error messages that name what the user typed.
_FLAGS = {"host": "--host", "port": "--port", "workers": "--workers"}


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in _DELEGATED:
        command = args_list[0]
        run = lambda: _delegate(_DELEGATED[command], args_list[1:])  # noqa: E731
    else:
        args = build_parser().parse_args(args_list)
        command = args.command
        if getattr(args, "chunk_size", 1) <= 0:
            print("assay score: --chunk-size must be positive", file=sys.stderr)
            return 2
        run = lambda: int(args.run(args))  # noqa: E731
    return _one_line_errors(command, run)


def _one_line_errors(command: str, run: Callable[[], int]) -> int:
    """Run a sub-command; settings, configuration and file errors end it with one line on stderr (what
    is wrong and what to do), never a traceback."""
    try:
        return run()
    except ValidationError as exc:
        text = settings_error(exc, _FLAGS) if exc.title == "Settings" else str(exc).splitlines()[0]
        print(f"assay {command}: {text}", file=sys.stderr)
    except AssayError as exc:  # ConfigError, MissingExtraError (the install command), ...
        print(f"assay {command}: {exc}", file=sys.stderr)
    except OSError as exc:
        print(f"assay {command}: {os_error(exc)}", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"assay {command}: interrupted", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
