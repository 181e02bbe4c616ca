"""The `sql` task: execution equivalence, read-only and bounded, on SQLite, DuckDB and PostgreSQL.

Modules: fields (its item fields), statement (find the SQL, sqlglot checks), engines / postgres (guarded
execution), catalog (databases by name), compare (result equivalence), scorer (the task), devdata (a
labelled dev set).
"""

from assay.verifiers.sql.scorer import SqlOptions, SqlScorer

TASK = "assay.verifiers.sql:SqlScorer"  # this folder is the `sql` task (assay.registry)

__all__ = ["SqlOptions", "SqlScorer"]
