"""Process reward models: a score for every reasoning step, not just the final answer.

Layout (one concept per module):
- steps.py       split a response into steps, check them
- aggregate.py   step scores -> one reward; the first step below a threshold
- formats.py     how a model wants (prompt, steps) laid out: Qwen2.5-Math-PRM, Math-Shepherd, a classifier
- batching.py    length-sorted batches under a token budget; the micro-batcher that gathers items across
                 HTTP calls for one forward pass
- backends/      transformers (in-process, torch imported lazily) and vLLM (`/pooling` over HTTP)
- the `prm` task itself is the folder assay.verifiers.prm

Importing this package (or the scorer) loads no torch or transformers: the registry imports every scorer
module at start-up, and a server without the `prm` extra must still serve the other tasks.
"""
