"""Verifiers: scorers that decide correctness against a reference (math, sql, code)."""
