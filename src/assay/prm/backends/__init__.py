"""PRM backends: `transformers` (in-process) and `vllm` (a `vllm serve --runner pooling` server).

Only `base` is imported eagerly; each backend module imports its heavy dependency inside functions.
"""
