"""What answer clusters cost a group (issue 42): clustering time against the group's scoring time.

    .venv/bin/python benchmarks/group_clusters.py [--sizes 8 16 64] [--groups 6] [--workers 2] [--sql]
        [--engines sqlite duckdb postgres] [--math [numbers mixed distinct]]

Groups of G math responses are scored through `Engine.score_groups` (the same path as POST /v1/groups);
`stats.clusters_ms` is the clustering's own time (a worker round trip included); the group's scoring time
is the wall time of its `score_groups` call less that (clustering runs after the items are scored).
Three shapes of group, from cheap to costly for the clustering:

- `numbers`: a fraction gold answered by equivalent spellings (`1/2`, `0.5`, `\\frac{1}{2}`) and wrong
  numbers: keys merge everything, no pairwise comparison.
- `mixed`: half numbers, half expressions in a few equivalent forms (`x+1`, `1+x`): a handful of pairs.
- `distinct`: G different polynomials, the worst case: no key merges anything and every pair of
  representatives goes to the comparer (G(G-1)/2 mutual comparisons, 2,016 at G = 64).
- `sql` (with `--sql`, on the dev `school` database): five queries, three of them one answer (a join, a
  subquery, the subquery with a semicolon), whose equivalence is result equality on the group's
  databases and perturbed copies; each group asks about its own course, so each has its own gold (and
  its own perturbed copies). `--engines` names the engines to run it on (`sql` is SQLite, `sql/duckdb`
  and `sql/postgres` the others; PostgreSQL runs on a throwaway server, scripts/pg_tmp.sh).
- `sql-alike` (with `--sql`): the sql worst case, G/2 queries whose results have one shape but differ
  (`WHERE id != k`) and a rewrite of each with its columns swapped: every pair of the same shape is
  compared, and each rewrite is checked on the copies, where scoring ran none of these wrong answers.

Target: clustering a small share of the group's scoring time (the printed `share`). The groups repeat
answers, so the workers' caches make their scoring cheap: the share is an upper bound for real groups,
whose long responses cost more to extract. Measured (2 shared cores under load, 2 workers, median of 7
groups, five runs; docs/voting.md has the table): with the clusters formed in the items' own worker task,
0.1-0.3 ms (1-5%) for keyed groups, 0.6-1 ms (2-12%) mixed, 1-24 ms (7-22%) for different polynomials,
whose sympy signatures are what is left, 8-37 ms (13-60%) for sql, whose mutual scorings are; a separate
worker round trip made the math groups 16-75% and sql 17-119% before. With a query memo per clustering
call (each distinct query once per database) and a gold per group, sql is 6-11 ms: 7-11% at G = 64
(16-23% before), 29-36% at G = 16 (35-58%), 20-41% at G = 8 (21-45%), where the perturbed copies of
each answer scored as the gold are the floor. With result equality on the reference's copies and the
results scoring recorded (verifiers/sql/equivalence.py), sql is 0.7-1.1 ms, 0.1-2.4% at G = 8 and 64 on
SQLite, DuckDB and PostgreSQL, and `sql-alike` 21-146% (293-962% before, or past the deadline);
docs/voting.md has one run each, before and after. With two answers judged wrong compared on the
database alone (no query run, no copy built), `sql-alike` is 3.7-10.1% on DuckDB and PostgreSQL and
25-27% on SQLite, where scoring is cheapest (38-157% and 49-64% before, the same run).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from assay.engine.scoring import Engine
from assay.settings import Settings, SqlSettings
from assay.verifiers.sql import devdata

_SQL = [
    "SELECT DISTINCT s.id, s.name FROM students s JOIN enrollments e ON e.student_id = s.id"
    " WHERE e.course_id = {c}",
    "SELECT id, name FROM students WHERE id IN (SELECT student_id FROM enrollments WHERE course_id = {c})",
    "SELECT id, name FROM students WHERE id IN (SELECT student_id FROM enrollments WHERE course_id = {c});",
    "SELECT id, name FROM students",
    "SELECT id, name FROM students WHERE id < {c}",
]


# `sql-alike`: G/2 answers of one shape (39 rows of two columns) whose rows differ, and as many rewrites of
# them with the columns swapped: G/2 clusters of two, each pair equal on every database and copy.
_ALIKE = [
    "SELECT id, name FROM students WHERE id != {k}",
    "SELECT name, id FROM students WHERE id + 0 != {k}",
]


def _item(answer: str, reference: str) -> dict[str, str]:
    return {"task": "math", "response": f"so the answer is \\boxed{{{answer}}}", "reference": reference}


def _group(shape: str, size: int, rng: random.Random, salt: int) -> list[dict[str, Any]]:
    p, q = salt + 2, salt + 3
    if shape.startswith("sql-alike"):  # one shape, different rows: nothing tells them apart but compare
        half = size // 2
        picks = [_ALIKE[0].format(k=k + 1) for k in range(half)]
        picks += [_ALIKE[1].format(k=k + 1) for k in range(size - half)]
        return _sql_items(shape, rng.sample(picks, len(picks)), _ALIKE[0].format(k=salt % half + 1))
    if shape.startswith("sql"):
        course = salt // 10 % 10 + 1  # each group its own course: its own gold, as a new prompt has
        gold = _SQL[0].format(c=course)
        picks = (rng.choice(_SQL).format(c=course) for _ in range(size))
        return _sql_items(shape, list(picks), gold)
    if shape == "numbers":
        forms = [f"{p}/{q}", f"\\frac{{{p}}}{{{q}}}", f"{2 * p}/{2 * q}", str(p + 1), str(q)]
        return [_item(rng.choice(forms), f"{p}/{q}") for _ in range(size)]
    if shape == "mixed":
        forms = [f"x+{p}", f"{p}+x", f"x^2+{q}", f"{q}+x^2", f"{p}/{q}", f"{2 * p}/{2 * q}", str(q)]
        return [_item(rng.choice(forms), f"x+{p}") for _ in range(size)]
    return [_item(f"{i + 1}x^{i % 5 + 2}+{salt + i}", f"x+{p}") for i in range(size)]


def _sql_items(shape: str, queries: list[str], gold: str) -> list[dict[str, Any]]:
    engine = shape.partition("/")[2] or "sqlite"
    return [
        {
            "task": "sql",
            "db_id": "school",
            "response": f"```sql\n{q}\n```",
            "reference": gold,
            "options": {"engine": engine},
        }
        for q in queries
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 64])
    parser.add_argument("--groups", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sql", action="store_true", help="also a sql group on the dev databases")
    parser.add_argument(
        "--math", nargs="*", default=["numbers", "mixed", "distinct"], help="math shapes (none: sql only)"
    )
    parser.add_argument("--engines", nargs="+", default=["sqlite"], choices=["sqlite", "duckdb", "postgres"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as databases, contextlib.ExitStack() as stack:
        devdata.build(Path(databases))
        dsns: dict[str, str] = {}
        if args.sql and "postgres" in args.engines:
            from sql_hacks import postgres_server  # a sibling script: the one throwaway server helper

            dsns = devdata.create_postgres(stack.enter_context(postgres_server()))
        sql = SqlSettings(databases=Path(databases), postgres_dsn=dsns)
        settings = Settings(workers=args.workers, sql=sql)
        engines = [e for e in ("sqlite", "duckdb", "postgres") if e in args.engines] if args.sql else []
        sql_shapes = (f"{kind}/{e}".removesuffix("/sqlite") for kind in ("sql", "sql-alike") for e in engines)
        shapes = (*(s for s in ("numbers", "mixed", "distinct") if s in args.math), *sql_shapes)
        _run(settings, shapes, args.sizes, args.groups)


def _run(settings: Settings, shapes: tuple[str, ...], sizes: list[int], groups: int) -> None:
    rng = random.Random(0)
    print(f"{'shape':>12} {'G':>3} {'scoring ms':>10} {'clusters ms':>11} {'share':>6} {'clusters':>8}")
    with Engine(settings) as engine:
        engine.score_groups([[_item("1", "1"), _item("2", "1")]])  # start and warm the workers
        for shape in shapes:
            for size in sizes:
                walls, costs, counts = [], [], []
                for g in range(groups):
                    group = _group(shape, size, rng, 1000 * size + 10 * g + 7)
                    started = time.perf_counter()
                    (outcome,) = engine.score_groups([group])
                    walls.append((time.perf_counter() - started) * 1000.0)
                    costs.append(outcome.stats.clusters_ms or 0.0)
                    counts.append(len(outcome.stats.answer_clusters or []))
                    if outcome.stats.clusters_unavailable:
                        print("  unavailable:", outcome.stats.clusters_unavailable)
                cost = statistics.median(costs)
                wall = statistics.median(w - c for w, c in zip(walls, costs, strict=True))
                print(
                    f"{shape:>12} {size:>3} {wall:>10.1f} {cost:>11.1f} {cost / wall:>6.1%} "
                    f"{statistics.median(counts):>8.0f}"
                )


if __name__ == "__main__":
    main()
