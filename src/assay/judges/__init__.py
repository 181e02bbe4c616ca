"""LLM judges over any OpenAI-compatible backend, debiased: the `judge` task and a verifier second opinion.

Modules: client (HTTP, retries, secrets), prompts, parsing (scores, verdicts, G-Eval), pointwise,
pairwise (both orders), length (length control), ensemble, cache (SQLite), scorer (`JudgeScorer`),
second_opinion. Nothing here imports a model library: the judge is reached over HTTP only.
"""
