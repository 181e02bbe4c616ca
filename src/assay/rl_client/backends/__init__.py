"""Inference backends for the Generate stage: `hf` (PyTorch loop, CPU) and `vllm` (GPU, lazy import)."""
