"""LLM judges over any OpenAI-compatible backend, debiased: what the `judge` task (assay.verifiers.judge)
and a verifier's second opinion drive.

Modules: client (HTTP, retries, secrets), prompts, parsing (scores, verdicts, G-Eval), pointwise,
pairwise (both orders), length (length control), ensemble, cache (SQLite), second_opinion. Nothing
here imports a model library: the judge is reached over HTTP only.
"""
