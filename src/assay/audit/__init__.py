"""`assay audit`: built-in probe families scored against the configured verifiers and judge, through
the public engine (no verdict path of its own). See docs/audit.md."""
