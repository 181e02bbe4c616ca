"""The `sql` task: execution equivalence, read-only and bounded, on SQLite, DuckDB and PostgreSQL.

Modules: statement (find the SQL, sqlglot checks), engines / postgres (guarded execution), catalog
(databases by name), compare (result equivalence), scorer (the task), devdata (a labelled dev set).
"""

from assay.verifiers.sql.scorer import SqlOptions, SqlScorer

__all__ = ["SqlOptions", "SqlScorer"]
