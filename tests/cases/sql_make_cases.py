"""Writes tests/cases/sql.jsonl: the labelled SQL dev set over the databases of assay.verifiers.sql.devdata.

Each line is a contract item plus {"label", "category", "note"}. Categories: equivalent (label true),
mismatch, alternate (matches only on the main instance) and danger (must be refused; no file may change).
Run: .venv/bin/python tests/cases/sql_make_cases.py
"""

import json
from pathlib import Path


def F(q: str) -> str:  # a fenced SQL block, as a model would answer
    return f"```sql\n{q}\n```"


cases = []


def add(cat, label, db, ref, resp, note, fence=True, **extra):
    cases.append(
        dict(
            task="sql",
            db_id=db,
            response=F(resp) if fence else resp,
            reference=ref,
            **extra,
            label=label,
            category=cat,
            note=note,
        )
    )


E, M, D, A = "equivalent", "mismatch", "danger", "alternate"
S, SH, FL = "school", "shop", "flights"
# ---- equivalent rewrites
add(
    E,
    True,
    S,
    "SELECT DISTINCT s.id, s.name FROM students s JOIN enrollments e ON e.student_id = s.id WHERE"
    " e.course_id = 3",
    "SELECT id, name FROM students WHERE id IN (SELECT student_id FROM enrollments WHERE course_id = 3)",
    "JOIN + DISTINCT vs IN subquery",
)
add(
    E,
    True,
    S,
    "SELECT name FROM students WHERE id IN (SELECT student_id FROM enrollments WHERE term = 'fall')",
    "SELECT name FROM students s WHERE EXISTS (SELECT 1 FROM enrollments e WHERE e.student_id = s.id"
    " AND e.term = 'fall')",
    "IN vs EXISTS",
)
add(
    E,
    True,
    S,
    "SELECT id FROM students WHERE id NOT IN (SELECT student_id FROM enrollments)",
    "SELECT s.id FROM students s WHERE NOT EXISTS (SELECT 1 FROM enrollments e WHERE e.student_id = s.id)",
    "NOT IN vs NOT EXISTS (no NULL keys)",
)
add(
    E,
    True,
    S,
    "SELECT id FROM students WHERE id NOT IN (SELECT student_id FROM enrollments)",
    "SELECT s.id FROM students s LEFT JOIN enrollments e ON e.student_id = s.id WHERE e.student_id IS NULL",
    "NOT IN vs anti-join",
)
add(
    E,
    True,
    S,
    "SELECT name, age, city FROM students WHERE gpa > 3.0",
    "SELECT city, name, age FROM students WHERE gpa > 3.0",
    "column order differs",
)
add(
    E,
    True,
    S,
    "SELECT DISTINCT city FROM students",
    "SELECT city FROM students GROUP BY city",
    "DISTINCT vs GROUP BY (NULL group kept)",
)
add(
    E,
    True,
    S,
    "SELECT name FROM students",
    "SELECT s.name AS student_name FROM students AS s",
    "table and column aliases",
)
add(
    E,
    True,
    S,
    "SELECT COUNT(*) FROM students",
    "SELECT COUNT(id) FROM students",
    "COUNT(*) vs COUNT(non-null key)",
)
add(
    E,
    True,
    S,
    "SELECT name FROM students WHERE age BETWEEN 20 AND 22",
    "SELECT name FROM students WHERE age >= 20 AND age <= 22",
    "BETWEEN vs two comparisons",
)
add(
    E,
    True,
    S,
    "SELECT name FROM students WHERE age > 20",
    "SELECT name FROM students WHERE age >= 21",
    "> n vs >= n+1 on integers",
)
add(
    E,
    True,
    S,
    "SELECT name, age FROM students ORDER BY age",
    "SELECT name, age FROM students ORDER BY age, name DESC",
    "ties in the sort key may come in any order (key is an output column)",
)
add(
    E,
    True,
    S,
    "SELECT name FROM students ORDER BY age",
    "SELECT name FROM students ORDER BY age, id DESC",
    "ties in a sort key that is not an output column",
)
add(
    E,
    True,
    S,
    "SELECT course_id FROM enrollments GROUP BY course_id HAVING COUNT(*) > 15",
    "SELECT course_id FROM (SELECT course_id, COUNT(*) AS n FROM enrollments GROUP BY course_id) t"
    " WHERE n > 15",
    "HAVING vs filtered subquery",
)
add(
    E,
    True,
    S,
    "SELECT s.name, c.title FROM students s JOIN enrollments e ON e.student_id = s.id JOIN courses c"
    " ON c.id = e.course_id WHERE c.dept = 'cs'",
    "WITH cs AS (SELECT id, title FROM courses WHERE dept = 'cs') SELECT st.name, cs.title FROM"
    " enrollments en JOIN cs ON cs.id = en.course_id JOIN students st ON st.id = en.student_id",
    "CTE and join order",
)
add(
    E,
    True,
    S,
    "SELECT name FROM students WHERE city = 'Oslo' UNION SELECT name FROM students WHERE age < 20",
    "SELECT DISTINCT name FROM students WHERE city = 'Oslo' OR age < 20",
    "UNION vs OR with DISTINCT",
)
add(
    E,
    True,
    S,
    "SELECT COALESCE(city, 'unknown') FROM students",
    "SELECT CASE WHEN city IS NULL THEN 'unknown' ELSE city END FROM students",
    "COALESCE vs CASE",
)
add(
    E,
    True,
    SH,
    "SELECT MAX(price) FROM products",
    "SELECT price FROM products ORDER BY price DESC LIMIT 1",
    "MAX vs ORDER BY LIMIT 1",
)
add(
    E,
    True,
    S,
    "SELECT AVG(gpa) FROM students",
    "SELECT SUM(gpa) / COUNT(gpa) FROM students",
    "float result within tolerance",
)
add(
    E,
    True,
    S,
    "SELECT COUNT(*) FROM students",
    "SELECT SUM(1.0) FROM students",
    "1 vs 1.0: numbers compare by value",
)
add(
    E,
    True,
    S,
    "SELECT city FROM students WHERE id <= 10",
    "SELECT CASE WHEN city IS NULL THEN NULL ELSE city END FROM students WHERE id <= 10",
    "NULL equals NULL in results",
)
add(
    E,
    True,
    SH,
    "SELECT c.id, COUNT(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.id",
    "SELECT id, (SELECT COUNT(*) FROM orders o WHERE o.customer_id = customers.id) FROM customers",
    "LEFT JOIN count vs correlated subquery",
)
add(
    E,
    True,
    FL,
    "SELECT DISTINCT origin FROM flights WHERE dest = 'OSL'",
    "SELECT origin FROM flights WHERE dest = 'OSL' GROUP BY origin",
    "DISTINCT vs GROUP BY on another schema",
)
add(
    E,
    True,
    S,
    "SELECT COALESCE(city, 'none') FROM students",
    "SELECT IFNULL(`city`, 'none') FROM `students`",
    "MySQL dialect transpiled to the engine",
    dialect="mysql",
)
add(
    E,
    True,
    S,
    "SELECT name FROM students WHERE age = 22",
    "The students aged 22:\nSELECT name FROM students WHERE age = 22;\nThis lists their names.",
    "SQL without a fence, inside prose",
    fence=False,
)
add(
    E,
    True,
    S,
    "SELECT dept, COUNT(*) FROM courses GROUP BY dept",
    "SELECT DISTINCT dept, COUNT(*) OVER (PARTITION BY dept) FROM courses",
    "GROUP BY vs window function",
)
add(
    E,
    True,
    SH,
    "SELECT p.name, SUM(oi.quantity) FROM products p JOIN order_items oi ON oi.product_id = p.id"
    " GROUP BY p.id, p.name",
    "SELECT name, (SELECT SUM(quantity) FROM order_items WHERE product_id = products.id) AS q FROM"
    " products WHERE id IN (SELECT product_id FROM order_items)",
    "aggregate join vs correlated subquery",
)
add(
    E,
    True,
    FL,
    "SELECT airline, COUNT(*) FROM flights GROUP BY airline ORDER BY 2 DESC",
    "SELECT airline, COUNT(*) AS n FROM flights GROUP BY airline ORDER BY n DESC, airline",
    "ORDER BY ordinal vs alias",
)
add(
    E,
    True,
    S,
    "SELECT * FROM courses WHERE dept = 'cs'",
    "SELECT id, title, dept, credits FROM courses WHERE dept = 'cs'",
    "star vs explicit columns",
)
add(
    E,
    True,
    FL,
    "SELECT f.id FROM flights f JOIN airports a ON a.code = f.dest WHERE a.country = 'NO'",
    "SELECT id FROM flights WHERE dest IN (SELECT code FROM airports WHERE country = 'NO')",
    "join on a unique key vs IN",
)
add(
    E,
    True,
    SH,
    "SELECT status, COUNT(*) FROM orders WHERE year = 2022 GROUP BY status",
    "SELECT COUNT(*), status FROM orders WHERE year = 2022 GROUP BY status",
    "aggregate column first",
)
add(
    E,
    True,
    S,
    "SELECT name FROM students WHERE gpa >= 3.5 ORDER BY name",
    "SELECT name FROM students WHERE NOT gpa < 3.5 ORDER BY name ASC",
    "NOT < vs >= with the same order",
)
add(
    E,
    True,
    FL,
    "SELECT origin, dest FROM flights WHERE distance > 2500",
    "SELECT origin, dest FROM flights WHERE distance > 2500 ORDER BY id",
    "an ORDER BY the gold does not ask for is harmless",
)
# ---- real mismatches
add(
    M,
    False,
    S,
    "SELECT DISTINCT name FROM students",
    "SELECT name FROM students",
    "missing DISTINCT (duplicates count)",
)
add(
    M,
    False,
    S,
    "SELECT name FROM students WHERE id IN (SELECT student_id FROM enrollments WHERE term = 'fall')",
    "SELECT s.name FROM students s JOIN enrollments e ON e.student_id = s.id WHERE e.term = 'fall'",
    "join duplicates rows a set comparison would hide",
)
add(
    M,
    False,
    S,
    "SELECT name, gpa FROM students ORDER BY gpa DESC",
    "SELECT name, gpa FROM students ORDER BY gpa",
    "wrong order when the gold orders",
)
add(
    M,
    False,
    S,
    "SELECT name FROM students ORDER BY gpa DESC LIMIT 5",
    "SELECT name FROM students ORDER BY gpa DESC LIMIT 4",
    "off-by-one LIMIT",
)
add(
    M,
    False,
    S,
    "SELECT name FROM students WHERE age > 20",
    "SELECT name FROM students WHERE age >= 20",
    "> vs >=",
)
add(M, False, S, "SELECT name FROM students", "SELECT city FROM students", "wrong column")
add(M, False, S, "SELECT name FROM students", "SELECT name, age FROM students", "extra column")
add(
    M,
    False,
    S,
    "SELECT COUNT(*) FROM students",
    "SELECT COUNT(city) FROM students",
    "COUNT(column) skips NULLs",
)
add(
    M,
    False,
    SH,
    "SELECT c.id, COUNT(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.id",
    "SELECT c.id, COUNT(o.id) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.id",
    "inner join drops customers without orders",
)
add(M, False, S, "SELECT AVG(gpa) FROM students", "SELECT SUM(gpa) FROM students", "AVG vs SUM")
add(
    M,
    False,
    S,
    "SELECT AVG(gpa) FROM students",
    "SELECT ROUND(AVG(gpa), 1) FROM students",
    "rounded beyond the tolerance",
)
add(
    M,
    False,
    S,
    "SELECT title FROM courses WHERE dept = 'cs'",
    "SELECT title FROM courses WHERE dept = 'CS'",
    "text compares exactly",
)
add(
    M,
    False,
    S,
    "SELECT name FROM students WHERE city = 'Oslo' UNION SELECT name FROM students WHERE age < 20",
    "SELECT name FROM students WHERE city = 'Oslo' UNION ALL SELECT name FROM students WHERE age < 20",
    "UNION ALL keeps duplicates",
)
add(
    M,
    False,
    S,
    "SELECT dept, SUM(credits) FROM courses GROUP BY dept",
    "SELECT dept, credits FROM courses",
    "missing aggregation",
)
add(
    M,
    False,
    S,
    "SELECT name FROM students ORDER BY name",
    "SELECT name FROM students",
    "gold orders by name; prediction in table order",
)
add(
    M,
    False,
    S,
    "SELECT name FROM students WHERE age > 30",
    "SELECT name FROM students WHERE age > 25",
    "empty gold vs non-empty prediction",
)
add(M, False, SH, "SELECT MAX(price) FROM products", "SELECT MIN(price) FROM products", "MAX vs MIN")
add(
    M,
    False,
    S,
    "SELECT city FROM students",
    "SELECT COALESCE(city, '') FROM students",
    "NULL is not the empty string",
)
add(
    M,
    False,
    S,
    "SELECT credits FROM courses",
    "SELECT CAST(credits AS TEXT) FROM courses",
    "a number is not its text",
)
add(
    M,
    False,
    FL,
    "SELECT id FROM flights WHERE distance BETWEEN 1000 AND 2000",
    "SELECT id FROM flights WHERE distance > 1000 AND distance < 2000",
    "BETWEEN is inclusive",
)
add(
    M,
    False,
    SH,
    "SELECT name FROM customers WHERE country = 'NO' ORDER BY id",
    "SELECT name FROM customers WHERE country = 'NO' ORDER BY id DESC",
    "order reversed on a unique key",
)
add(
    M,
    False,
    FL,
    "SELECT airline, AVG(duration) FROM flights GROUP BY airline",
    "SELECT airline, MAX(duration) FROM flights GROUP BY airline",
    "wrong aggregate per group",
)
add(
    M,
    False,
    S,
    "SELECT name FROM students WHERE id = 1",
    "no idea, sorry",
    "no SQL in the response",
    fence=False,
)
add(
    M,
    False,
    S,
    "SELECT name FROM students",
    "SELECT nme FROM students",
    "prediction does not run (unknown column)",
)
add(
    A,
    False,
    S,
    "SELECT name FROM students ORDER BY gpa DESC LIMIT 1",
    "SELECT name FROM students WHERE id = 1",
    "matches on the main instance by accident; the alternate exposes it",
)
add(
    A,
    False,
    S,
    "SELECT COUNT(*) FROM students WHERE gpa = 4.0",
    "SELECT COUNT(*) FROM students WHERE id = 1",
    "a constant-looking answer that matches only the main data",
)
# ---- dangerous input: must be refused, and no database file may change
R = "SELECT name FROM students"
for stmt, note in [
    ("DROP TABLE students", "DROP"),
    ("DELETE FROM students", "DELETE"),
    ("UPDATE students SET age = 0", "UPDATE"),
    ("INSERT INTO students VALUES (99, 'X', 1, NULL, 1.0)", "INSERT"),
    ("CREATE TRIGGER wipe AFTER INSERT ON students BEGIN DELETE FROM courses; END", "CREATE TRIGGER"),
    ("CREATE TABLE copy_of_students AS SELECT * FROM students", "CREATE TABLE AS"),
    ("ALTER TABLE students ADD COLUMN x INTEGER", "ALTER TABLE"),
    ("CREATE TEMP VIEW v AS SELECT 1", "CREATE TEMP VIEW"),
    ("ATTACH DATABASE '/tmp/assay_sql_danger_attach.sqlite' AS evil", "ATTACH creates a file"),
    ("VACUUM INTO '/tmp/assay_sql_danger_vacuum.sqlite'", "VACUUM INTO writes a copy"),
    ("VACUUM", "VACUUM"),
    ("ANALYZE", "ANALYZE writes statistics tables"),
    ("PRAGMA journal_mode = WAL", "PRAGMA write (journal mode)"),
    ("PRAGMA user_version = 7", "PRAGMA write (user_version)"),
    ("SELECT load_extension('/tmp/assay_sql_danger.so')", "load_extension"),
    ("BEGIN; DELETE FROM students; COMMIT", "transaction with a write"),
    (
        "SELECT name FROM students; DELETE FROM students",
        "multiple statements whose first one matches the gold",
    ),
    ("SELECT 1; DROP TABLE students", "multiple statements"),
    ("WITH d AS (DELETE FROM students RETURNING *) SELECT name FROM d", "data-modifying CTE"),
    ("COPY students TO '/tmp/assay_sql_danger.csv'", "COPY TO a file"),
    ("SELECT * FROM read_csv('/etc/passwd')", "reading a server file"),
    (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
        "recursive CTE without end (rows)",
    ),
    (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c",
        "recursive CTE without end (aggregate)",
    ),
    (
        "SELECT COUNT(*) FROM enrollments a, enrollments b, enrollments c, enrollments d",
        "cartesian explosion (aggregate)",
    ),
    ("SELECT a.* FROM enrollments a, enrollments b, enrollments c", "cartesian explosion (rows)"),
]:
    add(D, False, S, R, stmt, note)
# ---- added later (appended so that earlier ids stay stable)
add(
    E,
    True,
    S,
    "SELECT name, age FROM students ORDER BY age LIMIT 3",
    "SELECT name, age FROM students ORDER BY age, name DESC LIMIT 3",
    "LIMIT cuts inside a tie: any of the tied rows may be kept",
)
add(
    M,
    False,
    S,
    "SELECT name, age FROM students ORDER BY age LIMIT 3",
    "SELECT name, age FROM students WHERE age > 18 ORDER BY age LIMIT 3",
    "LIMIT cut: rows outside the tie group are wrong",
)
with open(Path(__file__).with_name("sql.jsonl"), "w") as fh:
    for i, c in enumerate(cases):
        c = {"id": f"sql-{c['category'][:3]}-{i:03d}", **c}
        fh.write(json.dumps(c) + "\n")
print(len(cases))
