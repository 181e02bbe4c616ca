"""Tests of assay.judges (a package, so that this conftest does not shadow `conftest` for other tests)."""
