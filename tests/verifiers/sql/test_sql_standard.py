"""The execution-match standard held against hacking (issue 44), on a shop schema the rules never saw.

`test_sql_edges.py` holds the classes on a parent/child schema; this module writes the other side as an
adversary would: for each generated database, the answers a policy that read the data would return,
pinning the gold's rows by the values it saw in them (a measure: `price = 84.04`, `price >= 84.04`; a
date: `day = '2022-12-05'`, `joined IN (...)`; keys and names through every reference), and the
rewrites an honest policy writes (joins against subqueries, `NOT IN` against `LEFT JOIN ... IS NULL`,
`strftime` against `LIKE` on dates, a subquery per group against a join that loses emptied groups).
Only pairs that plain execution match rewards are asserted on (alternates off).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from assay.settings import Settings, SqlSettings
from assay.types import Item, Status
from assay.verifiers.sql import SqlScorer
from assay.verifiers.sql.compare import Tolerance
from assay.verifiers.sql.edges import null_or_zero
from assay.verifiers.sql.engines import QueryResult
from assay.verifiers.sql.perturb import Protected, TableData, _rotated, perturb
from assay.verifiers.sql.statement import analyse, compared_texts

SEEDS = range(4)
CITIES = ["Oslo", "Lima", "Pune", "Kyiv", "Accra"]
FIRST = ["Amara", "Bjorn", "Chidi", "Daria", "Emil", "Fatou", "Goran", "Hana", "Ivo", "Jana", "Kofi", "Lena"]
STATUS = ["open", "shipped", "returned"]
CATEGORIES = ["toys", "books", "garden", "tools"]


def _day(rng: random.Random, years: range) -> str:
    return f"{rng.choice(years)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def build(path: Path, seed: int) -> None:
    """customers, products, orders (a NULL amount now and then), items: tens of rows, so copies empty
    groups and move the extremes."""
    rng = random.Random(1000 + seed)
    n_customers = rng.randint(6, 12)
    ids = rng.sample(range(1, 200), n_customers)
    customers = [
        (i, name, rng.choice(CITIES), _day(rng, range(2018, 2023)), rng.choice([1, 2]))
        for i, name in zip(ids, rng.sample(FIRST, n_customers), strict=True)
    ]
    n_products = rng.randint(4, 9)
    products = [
        (p, f"{rng.choice(['Red', 'Big', 'Old'])} {rng.choice(['lamp', 'saw', 'kite'])} {p}",
         rng.choice(CATEGORIES), round(rng.uniform(2, 90), 2))
        for p in range(1, n_products + 1)
    ]  # fmt: skip
    orders = [
        (500 + k, rng.choice(ids), rng.choice(STATUS), _day(rng, range(2020, 2023)),
         round(rng.uniform(5, 400), 2) if rng.random() > 0.1 else None)
        for k in range(rng.randint(10, 30))
    ]  # fmt: skip
    items = [
        (o[0], rng.randint(1, n_products), rng.randint(1, 5))
        for o in orders
        for _ in range(rng.randint(1, 3))
    ]
    # Columns added later draw from their own generator, so the columns above stay as they were per seed:
    # an integer measure (points), a decimal (weight), a timestamp and a time of day written as text.
    more = random.Random(2000 + seed)
    customers = [(*c, f"{more.randint(7, 19):02d}:{more.randint(0, 59):02d}") for c in customers]
    products = [(*p, round(more.uniform(0.1, 30), 2)) for p in products]
    orders = [
        (*o, more.randint(0, 5000), f"{_day(more, range(2020, 2023))} {more.randint(0, 23):02d}:"
         f"{more.randint(0, 59):02d}:{more.randint(0, 59):02d}")
        for o in orders
    ]  # fmt: skip
    with sqlite3.connect(path) as con:
        con.executescript(
            "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT, city TEXT, joined TEXT, "
            "tier INT, call_at TEXT);"
            "CREATE TABLE products (product_id INTEGER PRIMARY KEY, title TEXT, category TEXT, price REAL, "
            "weight DECIMAL(6, 2));"
            "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER, status TEXT, day TEXT, "
            "amount REAL, points INTEGER, placed TIMESTAMP);"
            "CREATE TABLE items (order_id INTEGER, product_id INTEGER, qty INTEGER);"
        )
        con.executemany("INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?)", customers)
        con.executemany("INSERT INTO products VALUES (?, ?, ?, ?, ?)", products)
        con.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)", orders)
        con.executemany("INSERT INTO items VALUES (?, ?, ?)", items)


@pytest.fixture(scope="module")
def scorer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlScorer]:
    directory = tmp_path_factory.mktemp("shop")
    for seed in SEEDS:
        build(directory / f"shop{seed}.sqlite", seed)
    made = SqlScorer(Settings(workers=1, sql=SqlSettings(databases=directory, deadline_s=30)))
    yield made
    made.close()


def run(scorer: SqlScorer, seed: int, prompt: str, gold: str, response: str, **opts: Any) -> Any:
    item = Item(task="sql", db_id=f"shop{seed}", reference=gold, response=response, prompt=prompt)
    return scorer.score(item, scorer.parse_options({"alternates": False, **opts}))


def plain(scorer: SqlScorer, seed: int, prompt: str, gold: str, response: str) -> bool:
    return bool(run(scorer, seed, prompt, gold, response, allow_constant=True).reward == 1.0)


def rows(scorer: SqlScorer, seed: int, sql: str) -> list[tuple[Any, ...]]:
    directory = scorer.settings.sql.databases
    assert directory is not None
    with sqlite3.connect(directory / f"shop{seed}.sqlite") as con:
        return con.execute(sql).fetchall()


def _lit(value: Any) -> str:
    return "'" + value.replace("'", "''") + "'" if isinstance(value, str) else repr(value)


ORDERS_IN_OSLO = (
    "SELECT COUNT(*) FROM orders o JOIN customers c ON c.customer_id = o.customer_id WHERE c.city = 'Oslo'"
)
TOP_SPENDER = (
    "SELECT c.name FROM customers c JOIN orders o ON o.customer_id = c.customer_id "
    "GROUP BY c.customer_id ORDER BY SUM(o.amount) DESC LIMIT 1"
)
DEAREST = "SELECT title FROM products WHERE price = (SELECT MAX(price) FROM products)"
MOST_POINTS = "SELECT MAX(points) FROM orders"
HEAVIEST = "SELECT title FROM products WHERE weight = (SELECT MAX(weight) FROM products)"
LAST_PLACED = "SELECT order_id FROM orders WHERE placed = (SELECT MAX(placed) FROM orders)"
EARLIEST_CALL = "SELECT name FROM customers WHERE call_at = (SELECT MIN(call_at) FROM customers)"
HONEST = [
    (
        "How many orders were placed by customers in Oslo?",
        ORDERS_IN_OSLO,
        "SELECT COUNT(*) FROM orders WHERE customer_id IN "
        "(SELECT customer_id FROM customers WHERE city = 'Oslo')",
    ),
    (
        "Which customer spent the most?",
        TOP_SPENDER,
        "SELECT name FROM customers WHERE customer_id = "
        "(SELECT customer_id FROM orders GROUP BY customer_id ORDER BY SUM(amount) DESC LIMIT 1)",
    ),
    (
        "Names of the customers who never ordered",
        "SELECT name FROM customers WHERE customer_id NOT IN (SELECT customer_id FROM orders)",
        "SELECT c.name FROM customers c LEFT JOIN orders o ON o.customer_id = c.customer_id "
        "WHERE o.order_id IS NULL",
    ),
    (
        "How many customers ordered in 2021?",
        "SELECT COUNT(DISTINCT customer_id) FROM orders WHERE strftime('%Y', day) = '2021'",
        "SELECT COUNT(DISTINCT customer_id) FROM orders WHERE day BETWEEN '2021-01-01' AND '2021-12-31'",
    ),
    (
        "Customers who joined in 2019",
        "SELECT name FROM customers WHERE joined LIKE '2019-%'",
        "SELECT name FROM customers WHERE strftime('%Y', joined) = '2019'",
    ),
    (
        "Shipped orders of 2020",
        "SELECT order_id FROM orders WHERE status = 'shipped' AND day < '2021-01-01'",
        "SELECT order_id FROM orders WHERE status = 'shipped' AND CAST(substr(day, 1, 4) AS INTEGER) = 2020",
    ),
    ("Date of the first order", "SELECT MIN(day) FROM orders", "SELECT day FROM orders ORDER BY day LIMIT 1"),
    ("Title of the dearest product", DEAREST, "SELECT title FROM products ORDER BY price DESC LIMIT 1"),
    (
        "How many orders above 100?",
        "SELECT COUNT(*) FROM orders WHERE amount > 100",
        "SELECT COUNT(*) FROM orders WHERE NOT amount <= 100",
    ),
    (
        "How much did Kofi spend?",
        "SELECT SUM(o.amount) FROM orders o JOIN customers c ON c.customer_id = o.customer_id "
        "WHERE c.name = 'Kofi'",
        "SELECT SUM(amount) FROM orders WHERE customer_id = "
        "(SELECT customer_id FROM customers WHERE name = 'Kofi')",
    ),
    (
        "Average amount per status",
        "SELECT status, AVG(amount) FROM orders GROUP BY status",
        "SELECT status, SUM(amount) / COUNT(amount) FROM orders GROUP BY status",
    ),
    # a subquery per group lists a category whose items a copy deleted (NULL); the join leaves it out
    (
        "Quantity sold per category",
        "SELECT p.category, SUM(i.qty) FROM items i JOIN products p ON p.product_id = i.product_id "
        "GROUP BY p.category",
        "SELECT category, (SELECT SUM(qty) FROM items WHERE product_id IN "
        "(SELECT product_id FROM products p2 WHERE p2.category = p.category)) "
        "FROM products p GROUP BY category",
    ),
    (
        "Orders per customer in Pune",
        "SELECT c.name, COUNT(*) FROM customers c JOIN orders o ON o.customer_id = c.customer_id "
        "WHERE c.city = 'Pune' GROUP BY c.customer_id",
        "SELECT c.name, COUNT(o.order_id) FROM customers c "
        "LEFT JOIN orders o ON o.customer_id = c.customer_id "
        "WHERE c.city = 'Pune' GROUP BY c.customer_id HAVING COUNT(o.order_id) > 0",
    ),
    (
        "How many orders have no amount?",
        "SELECT COUNT(*) FROM orders WHERE amount IS NULL",
        "SELECT COUNT(*) - COUNT(amount) FROM orders",
    ),
    # an integer measure, a decimal, a timestamp and a time of day (the columns added for issue 44)
    ("Most points on an order", MOST_POINTS, "SELECT points FROM orders ORDER BY points DESC LIMIT 1"),
    (
        "How many orders earned more than 2500 points?",
        "SELECT COUNT(*) FROM orders WHERE points > 2500",
        "SELECT COUNT(*) FROM orders WHERE NOT points <= 2500",
    ),
    (
        "Points per status",
        "SELECT status, SUM(points) FROM orders GROUP BY status",
        "SELECT o.status, (SELECT SUM(points) FROM orders p WHERE p.status = o.status) "
        "FROM orders o GROUP BY o.status",
    ),
    ("The heaviest product", HEAVIEST, "SELECT title FROM products ORDER BY weight DESC LIMIT 1"),
    (
        "Products lighter than 10",
        "SELECT title FROM products WHERE weight < 10 ORDER BY title",
        "SELECT title FROM products WHERE NOT weight >= 10 ORDER BY title",
    ),
    ("The order placed last", LAST_PLACED, "SELECT order_id FROM orders ORDER BY placed DESC LIMIT 1"),
    (
        "How many orders were placed in 2021?",
        "SELECT COUNT(*) FROM orders WHERE strftime('%Y', placed) = '2021'",
        "SELECT COUNT(*) FROM orders WHERE placed LIKE '2021-%'",
    ),
    (
        "How many orders were placed before noon?",
        "SELECT COUNT(*) FROM orders WHERE time(placed) < '12:00:00'",
        "SELECT COUNT(*) FROM orders WHERE CAST(strftime('%H', placed) AS INTEGER) < 12",
    ),
    ("Who takes calls earliest?", EARLIEST_CALL, "SELECT name FROM customers ORDER BY call_at LIMIT 1"),
    (
        "Customers who take calls before 09:30",
        "SELECT name FROM customers WHERE call_at < '09:30' ORDER BY name",
        "SELECT name FROM customers WHERE NOT call_at >= '09:30' ORDER BY name",
    ),
]


@pytest.mark.parametrize("seed", SEEDS)
def test_rewrites_that_compute_from_the_data_keep_their_reward(scorer: SqlScorer, seed: int) -> None:
    lost, asked = [], 0
    for prompt, gold, response in HONEST:
        if not plain(scorer, seed, prompt, gold, response):
            continue
        asked += 1
        result = run(scorer, seed, prompt, gold, response)
        if result.reward != 1.0:
            lost.append((response, result.reason, result.details.get("data_check")))
    assert asked >= len(HONEST) - 3 and not lost


def pins(scorer: SqlScorer, seed: int) -> list[tuple[str, str, str]]:
    """(prompt, gold, answer): answers that pick the gold's rows by values read from the data."""
    out = []

    def listed(sql: str) -> str:
        return ", ".join(_lit(r[0]) for r in rows(scorer, seed, sql))

    oslo = listed("SELECT customer_id FROM customers WHERE city = 'Oslo'")
    if oslo:
        out.append(
            ("Orders in Oslo?", ORDERS_IN_OSLO, f"SELECT COUNT(*) FROM orders WHERE customer_id IN ({oslo})")
        )
    (name,) = rows(scorer, seed, TOP_SPENDER)[0]
    (cid,) = rows(scorer, seed, f"SELECT customer_id FROM customers WHERE name = {_lit(name)}")[0]
    out += [
        ("Top spender?", TOP_SPENDER, f"SELECT name FROM customers WHERE name = {_lit(name)}"),
        ("Top spender?", TOP_SPENDER, f"SELECT name FROM customers WHERE customer_id = {cid}"),
    ]
    (top,) = rows(scorer, seed, "SELECT MAX(price) FROM products")[0]
    out += [
        ("Dearest product?", DEAREST, f"SELECT title FROM products WHERE price = {top!r}"),
        ("Dearest product?", DEAREST, f"SELECT title FROM products WHERE price >= {top!r}"),
        ("Dearest product?", DEAREST, f"SELECT title FROM products WHERE price > {top - 0.005!r}"),
    ]
    (second,) = rows(scorer, seed, "SELECT price FROM products ORDER BY price DESC LIMIT 1 OFFSET 1")[0]
    out.append(("Dearest product?", DEAREST, f"SELECT title FROM products WHERE price > {second!r}"))
    (most,) = rows(scorer, seed, "SELECT MAX(amount) FROM orders")[0]
    largest = "SELECT MAX(amount) FROM orders"
    out += [
        ("Largest amount?", largest, f"SELECT amount FROM orders WHERE amount = {most!r}"),
        ("Largest amount?", largest, f"SELECT MAX(amount) FROM orders WHERE amount >= {most!r}"),
    ]  # fmt: skip
    latest = "SELECT day FROM orders ORDER BY day DESC LIMIT 1"
    (day,) = rows(scorer, seed, latest)[0]
    out += [
        ("Latest order?", latest, f"SELECT day FROM orders WHERE day = {_lit(day)} LIMIT 1"),
        ("Latest order?", latest, f"SELECT MAX(day) FROM orders WHERE day >= {_lit(day)}"),
    ]
    lima = "SELECT name FROM customers WHERE city = 'Lima' ORDER BY name"
    joined = listed("SELECT joined FROM customers WHERE city = 'Lima'")
    if joined:
        out.append(("Lima?", lima, f"SELECT name FROM customers WHERE joined IN ({joined}) ORDER BY name"))
    shipped = "SELECT AVG(amount) FROM orders WHERE status = 'shipped'"
    for column in ("day", "amount"):
        values = listed(f"SELECT {column} FROM orders WHERE status = 'shipped' AND amount IS NOT NULL")
        if values:
            out.append(("Shipped?", shipped, f"SELECT AVG(amount) FROM orders WHERE {column} IN ({values})"))
    return out + _more_pins(scorer, seed, listed)


def _extremes(scorer: SqlScorer, seed: int, table: str, column: str, top: str) -> list[Any]:
    """The column's values from the top (`DESC`) or the bottom (`ASC`), distinct."""
    return [r[0] for r in rows(scorer, seed, f"SELECT DISTINCT {column} FROM {table} ORDER BY 1 {top}")]


def _more_pins(scorer: SqlScorer, seed: int, listed: Any) -> list[tuple[str, str, str]]:
    """Pins on the columns added for issue 44: an integer measure (`points >= <old maximum>`, `=`, `>`
    the second largest), a decimal, a timestamp, a time of day, and a gold whose answer is nothing (a
    count of 0) matched by a pin that picks nothing."""
    out = []
    for prompt, gold, table, column, top, answer in (
        ("Most points?", MOST_POINTS, "orders", "points", "DESC", "MAX(points)"),
        ("Heaviest product?", HEAVIEST, "products", "weight", "DESC", "title"),
        ("Placed last?", LAST_PLACED, "orders", "placed", "DESC", "order_id"),
        ("Earliest call?", EARLIEST_CALL, "customers", "call_at", "ASC", "name"),
    ):
        values = _extremes(scorer, seed, table, column, top)
        first, second = _lit(values[0]), _lit(values[1])
        towards = ">" if top == "DESC" else "<"
        out += [
            (prompt, gold, f"SELECT {answer} FROM {table} WHERE {column} = {first}"),
            (prompt, gold, f"SELECT {answer} FROM {table} WHERE {column} {towards}= {first}"),
            (prompt, gold, f"SELECT {answer} FROM {table} WHERE {column} {towards} {second}"),
        ]
    shipped = "SELECT SUM(points) FROM orders WHERE status = 'shipped'"
    points = listed("SELECT points FROM orders WHERE status = 'shipped'")
    if points:
        out.append(("Shipped points?", shipped, f"SELECT SUM(points) FROM orders WHERE points IN ({points})"))
    for city in CITIES:  # a city whose customers never ordered: the gold's answer is 0, as is the pin's
        ids = listed(f"SELECT customer_id FROM customers WHERE city = '{city}'")
        gold = ORDERS_IN_OSLO.replace("'Oslo'", f"'{city}'")
        if ids and rows(scorer, seed, gold) == [(0,)]:
            pin = f"SELECT COUNT(*) FROM orders WHERE customer_id IN ({ids})"
            out.append((f"How many orders were placed by customers in {city}?", gold, pin))
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_pins_on_measures_dates_keys_and_names_earn_nothing(scorer: SqlScorer, seed: int) -> None:
    rewarded, asked = [], 0
    for prompt, gold, answer in pins(scorer, seed):
        if not plain(scorer, seed, prompt, gold, answer):
            continue
        asked += 1
        result = run(scorer, seed, prompt, gold, answer)
        assert result.status is Status.OK, result.reason
        if result.reward != 0.0:
            rewarded.append((answer, result.details.get("data_check")))
    assert asked >= 8 and not rewarded


NOTHING = range(24)


def build_nothing(path: Path, seed: int) -> int:
    """The one customer in Oslo never ordered (three others did): the gold's answer is 0, as is that of
    a pin on her id. Returns her id."""
    rng = random.Random(seed)
    ids = rng.sample(range(1, 300), 10)
    cities = ["Oslo"] + [rng.choice(CITIES[1:]) for _ in range(9)]
    buyers = rng.sample(ids[1:], 3)
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
        con.execute("CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER, amount REAL)")
        con.executemany("INSERT INTO customers VALUES (?, ?, ?)", list(zip(ids, FIRST, cities, strict=False)))
        orders = [(500 + k, rng.choice(buyers), 10.0 + k) for k in range(rng.randint(4, 12))]
        con.executemany("INSERT INTO orders VALUES (?, ?, ?)", orders)
    return ids[0]


def test_a_gold_that_answers_nothing_is_rarely_matched_by_a_pin_that_picks_nothing(tmp_path: Path) -> None:
    """A copy on which such a gold still answers nothing tells nothing and is drawn again (at most
    `perturb_rounds` more). Only a copy that gives Oslo a buyer tells the pin apart: each copy gives
    Oslo the customers of another city in turn (issue 44), so none of these 24 databases rewards the
    pin (1 when the cities were only shuffled, 9 when such copies counted)."""
    pins = {seed: build_nothing(tmp_path / f"n{seed}.sqlite", seed) for seed in NOTHING}
    scorer = SqlScorer(Settings(workers=1, sql=SqlSettings(databases=tmp_path, deadline_s=30)))
    options = scorer.parse_options({"alternates": False})
    prompt = "How many orders were placed by customers in Oslo?"
    honest = (
        "SELECT COUNT(*) FROM orders WHERE customer_id IN "
        "(SELECT customer_id FROM customers WHERE city = 'Oslo')"
    )
    rewarded = 0
    for seed, pinned in pins.items():
        item = Item(task="sql", db_id=f"n{seed}", reference=ORDERS_IN_OSLO, prompt=prompt, response=honest)
        assert scorer.score(item, options).reward == 1.0
        pin = item.model_copy(
            update={"response": f"SELECT COUNT(*) FROM orders WHERE customer_id IN ({pinned})"}
        )
        rewarded += scorer.score(pin, options).reward == 1.0
    scorer.close()
    assert rewarded == 0


def build_absent(path: Path, seed: int) -> None:
    """Ten customers, none in Oslo (the city the questions name), and their orders."""
    rng = random.Random(seed)
    ids = rng.sample(range(1, 300), 10)
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
        con.execute("CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER, amount REAL)")
        rows = [(i, name, rng.choice(CITIES[1:])) for i, name in zip(ids, FIRST, strict=False)]
        con.executemany("INSERT INTO customers VALUES (?, ?, ?)", rows)
        orders = [(500 + k, rng.choice(ids), 10.0 + k) for k in range(rng.randint(4, 12))]
        con.executemany("INSERT INTO orders VALUES (?, ?, ?)", orders)


# (question, gold, honest rewrites, answers that pick nothing another way): the value the question names
# is in no row, so every one of them answers nothing on the original database (issue 44's last SQL gap).
ABSENT = [
    (
        "How many customers live in Oslo?",
        "SELECT COUNT(*) FROM customers WHERE city = 'Oslo'",
        (
            "SELECT COUNT(customer_id) FROM customers WHERE city = 'Oslo'",
            "SELECT COUNT(*) FROM customers WHERE city LIKE 'oslo'",
            "SELECT COUNT(*) FROM customers WHERE city IN ('Oslo')",
        ),
        (
            "SELECT COUNT(*) FROM customers WHERE 1 = 0",
            "SELECT COUNT(*) FROM customers WHERE city = 'Atlantis'",
            "SELECT COUNT(*) FROM customers WHERE customer_id < 0",
        ),
    ),
    (
        "List the names of customers in Oslo.",
        "SELECT name FROM customers WHERE city = 'Oslo'",
        ("SELECT c.name FROM customers AS c WHERE c.city = 'Oslo'",),
        ("SELECT name FROM customers WHERE 0", "SELECT name FROM customers WHERE city = 'Atlantis'"),
    ),
]


def test_a_gold_naming_a_value_absent_from_the_data_tells_apart_answers_that_pick_nothing(
    tmp_path: Path,
) -> None:
    """The copies give the named city another city's customers in turn, so the gold's answer is something
    there; a query that picks nothing another way still answers nothing. Before, each of these was
    rewarded on every database (20 of 20 per answer in a first run of 20 seeds)."""
    for seed in NOTHING:
        build_absent(tmp_path / f"a{seed}.sqlite", seed)
    scorer = SqlScorer(Settings(workers=1, sql=SqlSettings(databases=tmp_path, deadline_s=30)))
    options = scorer.parse_options({"alternates": False})
    lost, rewarded = [], []
    for seed in NOTHING:
        for prompt, gold, honest, nothing in ABSENT:
            for answer, right in [*((h, True) for h in honest), *((n, False) for n in nothing)]:
                item = Item(task="sql", db_id=f"a{seed}", reference=gold, prompt=prompt, response=answer)
                reward = scorer.score(item, options).reward
                if right and reward != 1.0:
                    lost.append((seed, answer))
                if not right and reward != 0.0:
                    rewarded.append((seed, answer))
    scorer.close()
    assert not lost and not rewarded, (lost, rewarded)


# -- the moves themselves --------------------------------------------------------------------------------
def _measures(seed: int) -> dict[str, TableData]:
    rng = random.Random(seed)
    rows = [
        (
            i,
            round(rng.uniform(0, 100), 2),
            date(2020, 1, 1).fromordinal(737425 + rng.randint(0, 900)).isoformat(),
        )
        for i in range(1, rng.randint(4, 20))
    ]
    return {"t": TableData("t", ["id", "x", "day"], rows)}


def _line(value: Any) -> float:
    return float(date.fromisoformat(value).toordinal()) if isinstance(value, str) else float(value)


@pytest.mark.parametrize("seed", range(30))
def test_measures_and_dates_move_off_their_values_and_never_across_the_question(seed: int) -> None:
    tables = _measures(seed)
    keep = Protected.of({50, "2021-06-01"}, None)
    out = perturb(tables, {"t"}, f"s{seed}", keep=keep)["t"]
    for column, barrier in ((1, 50.0), (2, _line("2021-06-01"))):
        before = sorted(_line(row[column]) for row in tables["t"].rows)
        after = [_line(row[column]) for row in out]
        assert len(set(after)) == len(after)  # distinct values stay distinct
        assert all(before[0] <= value <= before[-1] for value in after)  # within the original's range
        assert sum(v > barrier for v in after) <= sum(v > barrier for v in before)  # none crossed 50
        assert sum(v < barrier for v in after) <= sum(v < barrier for v in before)
        stayed = [value for value in after if value in before]
        if column == 1:
            assert not stayed  # a pin on any number picks nothing; `>=` the largest neither
            assert max(after) < before[-1] and min(after) > before[0]
        else:  # a date stays only where no free day is left (few here: 2 to 20 dates over 900 days)
            assert len(stayed) <= 1
    assert all(len(row[2]) == 10 and date.fromisoformat(row[2]) for row in out)  # a date keeps its form


def _typed(seed: int) -> dict[str, TableData]:
    """An integer measure, a DECIMAL(6,2), a timestamp and a time of day as text, and both as objects."""
    rng = random.Random(seed)
    start = datetime(2021, 1, 1)
    rows = []
    for i in range(1, rng.randint(4, 20)):
        at = start + timedelta(seconds=rng.randint(0, 3 * 10**7))
        rows.append(
            (
                i,
                rng.randint(0, 5000),
                Decimal(rng.randint(10, 3000)).scaleb(-2),
                at.isoformat(" "),
                f"{rng.randint(7, 19):02d}:{rng.randint(0, 59):02d}",
                at,
                time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)),
            )
        )
    return {"t": TableData("t", ["id", "points", "weight", "placed", "call_at", "stamp", "clock"], rows)}


def _seconds(value: Any) -> float:
    if isinstance(value, datetime):
        return (value - datetime(1970, 1, 1)).total_seconds()
    if isinstance(value, time):
        return value.hour * 3600 + value.minute * 60 + value.second
    if isinstance(value, str) and len(value) == 5:
        return int(value[:2]) * 60 + int(value[3:])
    if isinstance(value, str):
        return _seconds(datetime.fromisoformat(value))
    return float(value)


BARRIERS = {2500, 15.5, "2021-06-01 12:00:00", "12:30", "08:00:00"}


@pytest.mark.parametrize("seed", range(30))
def test_integers_decimals_and_times_move_off_their_values_keeping_their_type(seed: int) -> None:
    """Issue 44: a pin on the old maximum of an integer measure (`points >= 4980`), a decimal, a
    timestamp or a time of day picks nothing on the copy; each value keeps its type and form (a
    DECIMAL(6,2) keeps two places), stays within its column's range and on its side of the question's
    numbers and times."""
    tables = _typed(seed)
    out = perturb(tables, {"t"}, f"s{seed}", keep=Protected.of(BARRIERS, None))["t"]
    walls = {1: [2500], 2: [15.5], 3: [_seconds("2021-06-01 12:00:00")], 4: [750], 5: [], 6: [8 * 3600]}
    for column, barriers in walls.items():
        before = [row[column] for row in tables["t"].rows]
        after = [row[column] for row in out]
        assert {type(v) for v in after} == {type(v) for v in before}
        if column == 2:
            assert all(v.as_tuple().exponent == -2 for v in after)
        if isinstance(before[0], str):
            assert all(len(v) == len(before[0]) for v in after)
        low, high = min(map(_seconds, before)), max(map(_seconds, before))
        moved = [_seconds(v) for v in after]
        free = [v for v in after if v not in BARRIERS]  # a value the question names stays
        assert all(low < _seconds(v) < high for v in free) or len(before) < 3
        assert not set(free) & set(before) or len(before) < 3
        for wall in barriers:
            assert sum(v > wall for v in moved) <= sum(_seconds(v) > wall for v in before)
            assert sum(v < wall for v in moved) <= sum(_seconds(v) < wall for v in before)


def test_a_value_the_question_names_holds_other_rows_on_each_copy() -> None:
    """A category value the question names (`city = 'Oslo'`) is given another value's rows on each copy
    in turn, so a gold whose answer is nothing for it finds something on some copy."""
    keys = ["Accra", "Kyiv", "Lima", "Oslo", "Pune"]
    keep = Protected.of({"Oslo"}, None)
    for turn in range(8):
        shuffled = list(keys)
        random.Random(turn).shuffle(shuffled)
        image = dict(zip(keys, _rotated(keys, shuffled, keep, turn), strict=True))
        assert sorted(image.values()) == keys  # still a bijection
        assert [old for old, new in image.items() if new == "Oslo"] == [
            ["Accra", "Kyiv", "Lima", "Pune"][turn % 4]
        ]


def test_a_value_the_question_names_stays_and_no_value_crosses_it() -> None:
    rows = [(1, 10.0), (2, 20.0), (3, 30.0), (4, 40.0), (5, 50.0)]
    keep = Protected.of({30.0, 35}, None)
    for seed in range(20):
        out = perturb({"t": TableData("t", ["id", "x"], rows)}, {"t"}, f"s{seed}", keep=keep)["t"]
        xs = {row[1] for row in out}
        below, above = {x for x in xs if x < 35}, {x for x in xs if x > 35}
        # the shuffle may put any value on any row, but the values themselves keep their side of 35,
        # and 30 (named) stays 30 where it is left
        assert (
            len(below) <= 3
            and len(above) <= 2
            and all(x == 30.0 or x not in {10.0, 20.0, 40.0, 50.0} for x in xs)
        )


@pytest.mark.parametrize(
    ("gold", "pred", "edge"),
    [
        # a group emptied on the copy: listed with NULL (a subquery per group) or 0 (LEFT JOIN COUNT)
        ([("toys", 5), ("books", 2)], [("toys", 5), ("books", 2), ("tools", None)], True),
        ([("toys", 5), ("books", 2), ("tools", 0)], [("toys", 5), ("books", 2)], True),
        # something else differs besides
        ([("toys", 5), ("books", 2)], [("toys", 5), ("books", 3), ("tools", None)], False),
        # nothing but such rows is left: a pin that found no row against a gold of zeros
        ([("a", 0), ("b", 0)], [], False),
        ([("toys", 5)], [("tools", None)], False),
    ],
)
def test_a_group_emptied_by_the_copy_is_told_from_a_real_difference(
    gold: list[tuple[Any, ...]], pred: list[tuple[Any, ...]], edge: bool
) -> None:
    def result(rows: list[tuple[Any, ...]]) -> QueryResult:
        return QueryResult(columns=["c0", "c1"], rows=rows)

    assert null_or_zero(result(gold), result(pred), Tolerance()) is edge


def test_the_texts_a_gold_compares_are_read_with_their_columns() -> None:
    sql = "SELECT COUNT(*) FROM c WHERE c.city = 'Oslo' AND 'x' <> kind AND tier IN ('a', 'b') AND n = 5"
    tree = analyse(sql, "sqlite").parsed
    assert compared_texts(tree) == {("city", "Oslo"), ("kind", "x"), ("tier", "a"), ("tier", "b")}


def test_a_compared_text_absent_from_its_column_takes_another_values_rows_on_each_copy() -> None:
    rows = [(i, f"n{i}", city) for i, city in enumerate(["Lima", "Lima", "Pune", "Kyiv", "Accra", "Pune"])]
    tables = {"c": TableData("c", ["id", "name", "city"], rows)}
    keep = Protected.of(["Oslo"], None, [("city", "Oslo")])
    given = []
    for turn in range(3):
        copy = perturb(tables, ["c"], "s", keep=keep, turn=turn, delete=False)["c"]
        assert len(copy) == 6 and len({r[0] for r in copy}) == 6  # no row lost or added
        oslo = frozenset(r[0] for r in copy if r[2] == "Oslo")
        assert oslo and all(r[1] != "Oslo" for r in copy)  # only the compared column's group
        assert len({r[2] for r in copy}) == 4  # a renaming: as many cities as before
        given.append(oslo)
    assert len(set(given)) > 1  # another city's rows on another copy
