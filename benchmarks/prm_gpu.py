"""PRM scoring throughput of the transformers backend on a GPU: a ~1.5B Qwen2 PRM with random weights.

    .venv/bin/python benchmarks/prm_gpu.py                 # on a machine with a CUDA GPU (bf16)
    .venv/bin/python benchmarks/prm_gpu.py --smoke         # tiny config on CPU (what the test suite runs)

What it measures: `TransformersBackend.forward` (the code the `prm` task runs: right padding, explicit
positions, heads read at the step tags in float32) over batches of items shaped like real reasoning
(a prompt of ~80-200 tokens, 4-16 steps of ~30-150 tokens each, one `<extra_0>` tag after every step).
For each batch size it prints items/s, steps/s, tokens/s (real tokens, not padding), the padding share,
peak GPU memory, and the largest change of any step score between scoring the first item alone and
inside the batch (bf16 makes that non-zero on GPUs; fp32 on CPU keeps it below 1e-5).

Why random weights: no download is possible there, and speed does not depend on the values. The config is
Qwen2.5-Math-1.5B's shape (hidden 1536, 28 layers, 12 heads, 2 KV heads, MLP 8960, vocabulary 151936)
with Qwen2.5-Math-PRM's head (1536 x 1536, ReLU, 2 x 1536): about 1.5B parameters.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from assay.prm.backends.transformers_backend import Encoded, TransformersBackend
from assay.prm.formats import make_format
from assay.settings import PrmSettings

MARKER_ID = 151651  # Qwen's <extra_0>; the tiny config uses 3


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    marker_id: int
    prompt_tokens: tuple[int, int]
    steps: tuple[int, int]
    step_tokens: tuple[int, int]


FULL = Shape(1536, 28, 12, 2, 8960, 151936, MARKER_ID, (80, 200), (4, 16), (30, 150))
SMOKE = Shape(64, 2, 2, 2, 128, 512, 3, (10, 30), (2, 5), (5, 20))


def build_model(shape: Shape, device: str, dtype: Any) -> Any:
    """A Qwen2ForProcessRewardModel with random weights, built directly on `device` in `dtype`."""
    import torch
    from transformers import Qwen2Config

    from assay.prm.backends.qwen_prm_model import Qwen2ForProcessRewardModel

    values: dict[str, Any] = dict(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        num_labels=2,
        pad_token_id=0,
    )
    config = Qwen2Config(**values)
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = Qwen2ForProcessRewardModel(config)
    finally:
        torch.set_default_dtype(previous)
    return model


def make_items(shape: Shape, count: int, seed: int) -> list[Encoded]:
    """Token ids shaped like reasoning: a prompt, then steps each closed by the step tag."""
    rng = random.Random(seed)
    items = []
    for _ in range(count):
        ids = [rng.randrange(10, shape.vocab - 10) for _ in range(rng.randint(*shape.prompt_tokens))]
        read_at = []
        for _ in range(rng.randint(*shape.steps)):
            ids += [rng.randrange(10, shape.vocab - 10) for _ in range(rng.randint(*shape.step_tokens))]
            read_at.append(len(ids))
            ids.append(shape.marker_id)
        items.append(Encoded(ids, read_at))
    return items


def _sync(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_batch_size(
    backend: TransformersBackend, items: list[Encoded], size: int, repeats: int, device: str
) -> dict[str, float]:
    import torch

    on_gpu = device.startswith("cuda")
    batches = [items[i : i + size] for i in range(0, len(items) - size + 1, size)][:repeats]
    backend.forward(batches[0])  # warm-up (kernels, allocator)
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
    _sync(torch, device)
    times = []
    for batch in batches:
        started = time.perf_counter()
        backend.forward(batch)
        _sync(torch, device)
        times.append(time.perf_counter() - started)
    seconds = statistics.median(times)
    first = batches[0]
    alone = backend.forward(first[:1])[0].scores
    inside = backend.forward(first)[0].scores
    real = statistics.mean(sum(len(e.input_ids) for e in b) for b in batches)
    padded = statistics.mean(len(b) * max(len(e.input_ids) for e in b) for b in batches)
    steps = statistics.mean(sum(len(e.read_at) for e in b) for b in batches)
    peak = (
        torch.cuda.max_memory_allocated() / 2**30
        if on_gpu
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    )
    return {
        "size": size,
        "items_s": size / seconds,
        "steps_s": steps / seconds,
        "tokens_s": real / seconds,
        "padding": 1 - real / padded,
        "peak_gib": peak,
        "ms": seconds * 1000,
        "drift": max(abs(a - b) for a, b in zip(alone, inside, strict=True)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny config on CPU, for the test suite")
    parser.add_argument(
        "--batch-sizes", default=None, help="comma-separated (default 1,4,16,32,64; smoke 1,2,4)"
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed batches per size (default 5; smoke 2)"
    )
    parser.add_argument("--device", default=None, help="default cuda (cpu with --smoke)")
    args = parser.parse_args(argv)

    import torch

    shape = SMOKE if args.smoke else FULL
    device = args.device or ("cpu" if args.smoke else "cuda")
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: run with --smoke for the CPU check", file=sys.stderr)
        return 2
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    sizes = [int(s) for s in (args.batch_sizes or ("1,2,4" if args.smoke else "1,4,16,32,64")).split(",")]
    repeats = args.repeats or (2 if args.smoke else 5)

    started = time.perf_counter()
    model = build_model(shape, device, dtype)
    params = sum(p.numel() for p in model.parameters())
    settings = PrmSettings(device=device, max_tokens=32768)
    backend = TransformersBackend.for_model(settings, make_format("qwen"), model, marker_id=shape.marker_id)
    items = make_items(shape, max(sizes) * (repeats + 1), seed=1)
    name = torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"
    print(
        f"model: Qwen2 PRM, {params / 1e6:,.1f}M parameters, {dtype}, on {name} "
        f"(built in {time.perf_counter() - started:.1f}s)"
    )
    lengths = [len(e.input_ids) for e in items]
    print(
        f"items: {statistics.mean(lengths):.0f} tokens on average (min {min(lengths)}, max {max(lengths)}), "
        f"{statistics.mean(len(e.read_at) for e in items):.1f} steps"
    )
    memory = "peak GiB" if device.startswith("cuda") else "max RSS GiB"
    print(
        f"{'batch':>5} {'ms/batch':>9} {'items/s':>9} {'steps/s':>9} {'tokens/s':>10} {'padding':>8} "
        f"{memory:>11} {'max |Δ| vs alone':>17}"
    )
    for size in sizes:
        row = run_batch_size(backend, items, size, repeats, device)
        print(
            f"{row['size']:>5} {row['ms']:>9.1f} {row['items_s']:>9.1f} {row['steps_s']:>9.1f} "
            f"{row['tokens_s']:>10.0f} {row['padding']:>8.1%} {row['peak_gib']:>11.2f} {row['drift']:>17.2e}"
        )
    backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
