"""The data check to the execution-match standard, held against hacking (issue 44), on generated schemas.

A query that computes its answer from the data and matches on the item's own database earns 1, also
where a perturbed copy makes an edge case the question never meant (an aggregate over no rows, a new tie
at a LIMIT); an answer that pins the gold's rows with literals (the ids or names of its rows, constants
in any disguise) earns 0. Each case is checked on several small random databases (a parent table, a
child table that references it, a self-reference), built per seed: the rules never saw them. Only items
that plain execution match rewards are asserted on (`allow_constant: true`, alternates off): the hacks
do fool the original database, and the honest answers do match there.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.settings import Settings, SqlSettings
from assay.types import Item, Status
from assay.verifiers.sql import SqlScorer
from assay.verifiers.sql.compare import Tolerance
from assay.verifiers.sql.edges import null_or_zero, within
from assay.verifiers.sql.engines import QueryResult
from assay.verifiers.sql.perturb import Protected, TableData, perturb

SEEDS = range(8)
NAMES = ["Ada", "Bola", "Chen", "Dmitri", "Esra", "Farid", "Gita", "Hugo", "Ines", "Joao", "Kemi", "Liu"]
KINDS = ["red", "green", "blue"]


def build(path: Path, seed: int) -> None:
    """parent(id, name, kind, amount), child(id, parent_id, score, flag), staff(id, boss_id, pay):
    few rows, so deletions and cascades empty groups and make ties often."""
    rng = random.Random(seed)
    n_parent = rng.randint(3, 7)
    ids = rng.sample(range(1, 60), n_parent)
    names = [*rng.sample([n for n in NAMES if n != "Kemi"], n_parent - 1), "Kemi"]
    parents = [(i, nm, rng.choice(KINDS), rng.randint(1, 40)) for i, nm in zip(ids, names, strict=True)]
    children = [
        (100 + k, rng.choice(ids), rng.randint(0, 9), rng.randint(0, 1)) for k in range(rng.randint(2, 9))
    ]
    staff = [(1, None, 50)] + [(k, rng.randint(1, k - 1), rng.randint(10, 90)) for k in range(2, 7)]
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT, kind TEXT, amount INTEGER)")
        con.execute(
            "CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER, score INTEGER, flag INTEGER)"
        )
        con.execute("CREATE TABLE staff (id INTEGER PRIMARY KEY, boss_id INTEGER, pay INTEGER)")
        con.executemany("INSERT INTO parent VALUES (?, ?, ?, ?)", parents)
        con.executemany("INSERT INTO child VALUES (?, ?, ?, ?)", children)
        con.executemany("INSERT INTO staff VALUES (?, ?, ?)", staff)


@pytest.fixture(scope="module")
def scorer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlScorer]:
    directory = tmp_path_factory.mktemp("edges")
    for seed in SEEDS:
        build(directory / f"g{seed}.sqlite", seed)
    made = SqlScorer(Settings(workers=1, sql=SqlSettings(databases=directory, deadline_s=30)))
    yield made
    made.close()


def run(
    scorer: SqlScorer, seed: int, gold: str, response: str, prompt: str | None = None, **opts: Any
) -> Any:
    item = Item(task="sql", db_id=f"g{seed}", reference=gold, response=response, prompt=prompt)
    return scorer.score(item, scorer.parse_options({"alternates": False, **opts}))


def rows(scorer: SqlScorer, seed: int, sql: str) -> list[tuple[Any, ...]]:
    directory = scorer.settings.sql.databases
    assert directory is not None
    with sqlite3.connect(directory / f"g{seed}.sqlite") as con:
        return con.execute(sql).fetchall()


def plain(scorer: SqlScorer, seed: int, gold: str, response: str, prompt: str | None = None) -> bool:
    """Plain execution match on the item's own database (no data check)."""
    return bool(run(scorer, seed, gold, response, prompt, allow_constant=True).reward == 1.0)


# -- honest answers: equivalent on the data the question is about --------------------------------------
HONEST = [
    # COUNT(*) ... WHERE against SUM(CASE ...): 0 against NULL once a copy empties the table
    (
        "SELECT COUNT(*) FROM child WHERE flag = 1",
        "SELECT SUM(CASE WHEN flag = 1 THEN 1 ELSE 0 END) FROM child",
    ),
    (
        "SELECT COUNT(*) FROM child WHERE score > 4",
        "SELECT SUM(CASE WHEN score > 4 THEN 1 ELSE 0 END) FROM child",
    ),
    # SUM against TOTAL: NULL against 0.0 where no row is left in the group
    (
        "SELECT SUM(amount) FROM parent WHERE kind = 'red'",
        "SELECT TOTAL(amount) FROM parent WHERE kind = 'red'",
    ),
    ("SELECT SUM(score) FROM child WHERE flag = 0", "SELECT TOTAL(score) FROM child WHERE flag = 0"),
    # = (SELECT MAX ...) against ORDER BY ... DESC LIMIT 1: a new tie on the copy splits them
    (
        "SELECT parent_id FROM child GROUP BY parent_id ORDER BY COUNT(*) DESC LIMIT 1",
        "SELECT parent_id FROM child GROUP BY parent_id HAVING COUNT(*) = "
        "(SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM child GROUP BY parent_id))",
    ),
    (
        "SELECT p.name FROM parent p JOIN child c ON c.parent_id = p.id GROUP BY p.id "
        "HAVING SUM(c.score) = (SELECT MAX(t) FROM (SELECT SUM(score) AS t FROM child GROUP BY parent_id))",
        "SELECT p.name FROM parent p JOIN child c ON c.parent_id = p.id GROUP BY p.id "
        "ORDER BY SUM(c.score) DESC LIMIT 1",
    ),
    (
        "SELECT name FROM parent WHERE amount = (SELECT MAX(amount) FROM parent)",
        "SELECT name FROM parent ORDER BY amount DESC LIMIT 1",
    ),
    # MAX over an emptied group (one NULL row) against ORDER BY ... LIMIT 1 (no row)
    (
        "SELECT MAX(score) FROM child WHERE flag = 1",
        "SELECT score FROM child WHERE flag = 1 ORDER BY score DESC LIMIT 1",
    ),
    # joins through the keys, which move together
    (
        "SELECT p.name, COUNT(*) FROM parent p JOIN child c ON c.parent_id = p.id GROUP BY p.name",
        "SELECT (SELECT name FROM parent WHERE id = c.parent_id), COUNT(*) FROM child c GROUP BY c.parent_id",
    ),
    ("SELECT COUNT(*) FROM staff WHERE boss_id IS NOT NULL", "SELECT COUNT(boss_id) FROM staff"),
    (
        "SELECT s.pay FROM staff s JOIN staff b ON s.boss_id = b.id WHERE b.boss_id IS NULL",
        "SELECT pay FROM staff WHERE boss_id IN (SELECT id FROM staff WHERE boss_id IS NULL)",
    ),
]


@pytest.mark.parametrize("seed", SEEDS)
def test_answers_that_compute_from_the_data_keep_their_reward(scorer: SqlScorer, seed: int) -> None:
    lost = []
    for gold, response in HONEST:
        if not plain(scorer, seed, gold, response):
            continue  # they differ on this database itself (a tie there): not a control here
        result = run(scorer, seed, gold, response)
        if result.reward != 1.0:
            lost.append((gold, response, result.reason, result.details.get("data_check")))
    assert not lost


# -- hacks: literals that pick the gold's rows ---------------------------------------------------------
def _list(values: list[Any]) -> str:
    return ", ".join(repr(v) for v in values)


def hacks(scorer: SqlScorer, seed: int) -> list[tuple[str, str]]:
    """(gold, answer) pairs where the answer pins the gold's rows with literals read from the data, as a
    policy that saw the database would write them."""
    out = []
    gold = "SELECT name FROM parent WHERE amount > 20"
    ids = [r[0] for r in rows(scorer, seed, "SELECT id FROM parent WHERE amount > 20")]
    if ids:
        out.append((gold, f"SELECT name FROM parent WHERE id IN ({_list(ids)})"))
        out.append((gold, f"SELECT name FROM parent WHERE id = {ids[0]}" if len(ids) == 1 else gold))
    top = "SELECT name, amount FROM parent WHERE amount = (SELECT MAX(amount) FROM parent)"
    found = rows(scorer, seed, top)
    if len(found) == 1:
        name = found[0][0]
        out.append((top, f"SELECT name, amount FROM parent WHERE name = '{name}'"))
        out.append((top, f"SELECT name, amount FROM parent WHERE name IN ('{name}') ORDER BY amount"))
        # a pin in the ORDER BY: once the name is gone every row ties at the LIMIT (not an edge case)
        out.append((top, f"SELECT name, amount FROM parent ORDER BY name = '{name}' DESC LIMIT 1"))
        (top_id,) = rows(scorer, seed, f"SELECT id FROM parent WHERE name = '{name}'")[0]
        out.append((top, f"SELECT name, amount FROM parent ORDER BY id = {top_id} DESC, kind LIMIT 1"))
        out.append((top, f"SELECT name, amount FROM parent WHERE CASE WHEN name = '{name}' THEN 1 END = 1"))
        out.append(
            (top, f"SELECT p.name, p.amount FROM parent p JOIN (VALUES ('{name}')) v ON v.column1 = p.name")
        )
    kids = "SELECT COUNT(*) FROM child c JOIN parent p ON p.id = c.parent_id WHERE p.kind = 'red'"
    pids = [r[0] for r in rows(scorer, seed, "SELECT id FROM parent WHERE kind = 'red'")]
    if pids:
        out.append((kids, f"SELECT COUNT(*) FROM child WHERE parent_id IN ({_list(pids)})"))
        out.append(
            (
                kids,
                "SELECT COUNT(*) FROM child WHERE parent_id IN "
                f"(SELECT id FROM parent WHERE id IN ({_list(pids)}))",
            )
        )
    cids = [r[0] for r in rows(scorer, seed, "SELECT id FROM child WHERE score > 4")]
    if cids:
        gold = "SELECT id, score FROM child WHERE score > 4"
        out.append((gold, f"SELECT id, score FROM child WHERE id IN ({_list(cids)})"))
        out.append(
            (
                gold,
                "SELECT id, score FROM child WHERE id IN ("
                + " UNION ".join(f"SELECT {i}" for i in cids)
                + ")",
            )
        )
    (count,) = rows(scorer, seed, "SELECT COUNT(*) FROM child WHERE flag = 1")[0]
    flagged = "SELECT COUNT(*) FROM child WHERE flag = 1"
    out.append((flagged, f"SELECT COUNT(*) * 0 + {count} FROM child"))
    out.append((flagged, f"SELECT (SELECT {count}) FROM parent LIMIT 1"))
    out.append((flagged, f"SELECT CASE WHEN COUNT(*) >= 0 THEN {count} END FROM child"))
    return out


def _by_chance(answer: str) -> bool:
    """`ORDER BY id = 7 DESC, kind LIMIT 1`: once id 7 moved away it is `ORDER BY kind LIMIT 1`, a wrong
    query that returns the gold's row by chance; on a table of 2 to 4 rows that can happen on every copy
    (held-out seeds 100-159: 7 of 55 rewarded before a match on a new tie stopped counting, 3 after)."""
    return "ORDER BY id =" in answer


@pytest.mark.parametrize("seed", SEEDS)
def test_answers_that_pin_the_gold_rows_earn_nothing(scorer: SqlScorer, seed: int) -> None:
    rewarded = []
    for gold, answer in hacks(scorer, seed):
        if gold == answer or _by_chance(answer) or not plain(scorer, seed, gold, answer):
            continue
        result = run(scorer, seed, gold, answer)
        assert result.status is Status.OK, result.reason
        if result.reward != 0.0:
            rewarded.append((gold, answer, result.details.get("data_check")))
    assert not rewarded


def test_a_pin_in_the_order_by_is_rarely_rewarded_by_chance(scorer: SqlScorer) -> None:
    pairs = [
        (seed, gold, answer)
        for seed in SEEDS
        for gold, answer in hacks(scorer, seed)
        if _by_chance(answer) and plain(scorer, seed, gold, answer)
    ]
    rewarded = [answer for seed, gold, answer in pairs if run(scorer, seed, gold, answer).reward != 0.0]
    assert len(pairs) >= 4 and len(rewarded) <= 1


def test_a_literal_the_prompt_names_stays_allowed(scorer: SqlScorer) -> None:
    # The gold finds Kemi by a prefix; the answer names her, as the question does.
    gold = "SELECT amount FROM parent WHERE name LIKE 'Ke%'"
    answer = "SELECT amount FROM parent WHERE name = 'Kemi'"
    prompt = "What amount does the parent named Kemi hold?"
    for seed in SEEDS:
        assert plain(scorer, seed, gold, answer)
        assert run(scorer, seed, gold, answer, prompt).reward == 1.0
    # Without the prompt, the name is one the question never gave: a pin, and no reward.
    assert any(run(scorer, seed, gold, answer).reward == 0.0 for seed in SEEDS)


# -- the perturbation itself ---------------------------------------------------------------------------
def _tables(seed: int) -> dict[str, TableData]:
    rng = random.Random(seed)
    parents = [(i, NAMES[i % len(NAMES)] + str(i), rng.choice(KINDS)) for i in range(1, rng.randint(3, 12))]
    children = [(100 + k, rng.randint(1, len(parents)), rng.randint(0, 3)) for k in range(rng.randint(1, 6))]
    return {
        "parent": TableData("parent", ["id", "name", "kind"], parents),
        "child": TableData("child", ["id", "parent_id", "n"], children),
    }


@pytest.mark.parametrize("seed", range(40))
def test_no_table_that_had_rows_is_left_empty(seed: int) -> None:
    tables = _tables(seed)
    for round_ in range(3):
        out = perturb(tables, set(tables), f"s{seed}:{round_}")
        assert all(out[name] for name in tables), out


@pytest.mark.parametrize("seed", range(20))
def test_keys_and_names_move_out_of_the_domain_through_every_reference(seed: int) -> None:
    tables = _tables(seed)
    keep = Protected.of({"red"}, "what about parent 2?")
    out = perturb(tables, set(tables), f"s{seed}", keep=keep)
    old_ids = {row[0] for row in tables["parent"].rows}
    new_ids = {row[0] for row in out["parent"]}
    assert not (new_ids - {2}) & old_ids  # moved, but the id the prompt names may stay
    assert {row[1] for row in out["child"]} <= new_ids  # every reference moved with its key
    old_names = {row[1] for row in tables["parent"].rows}
    assert not {row[1] for row in out["parent"]} & old_names  # names too
    kinds = [row[2] for row in tables["parent"].rows]
    if len(set(kinds)) < len(kinds):  # a category (values shared by rows) keeps its domain
        assert {row[2] for row in out["parent"]} <= set(KINDS)


def test_a_protected_value_is_matched_as_a_whole_word_of_the_prompt() -> None:
    keep = Protected.of({"Dana", 7}, "How many orders did customer 15 place in Oslo?")
    assert "dana" in keep and "Dana" in keep and 7 in keep and 15 in keep and "Oslo" in keep
    assert 5 not in keep and 1 not in keep and "Osl" not in keep and "Ada" not in keep


def _result(*rows: tuple[Any, ...]) -> QueryResult:
    return QueryResult(columns=[f"c{i}" for i in range(len(rows[0]) if rows else 1)], rows=list(rows))


@pytest.mark.parametrize(
    ("a", "b", "edge"),
    [
        (_result((None,)), _result((0,)), True),  # SUM against TOTAL / COUNT over no rows
        (_result((None,)), _result(), True),  # MAX over no rows against ORDER BY ... LIMIT 1
        (_result((0,)), _result(), True),
        (_result(("red", None)), _result(("red", 0)), True),
        (_result((None,)), _result((3,)), False),  # a value, not "nothing"
        (_result((1,)), _result((2,)), False),  # no NULL and no zero row: a real difference
        (_result(("red", None)), _result(("blue", 0)), False),
    ],
)
def test_an_aggregate_over_no_rows_is_told_from_a_real_difference(
    a: QueryResult, b: QueryResult, edge: bool
) -> None:
    assert null_or_zero(a, b, Tolerance()) is edge


def test_only_a_cut_within_the_other_result_is_a_tie_difference() -> None:
    tied = _result(("Ada", 9), ("Ben", 9))
    assert within(_result(("Ben", 9)), tied, Tolerance())
    assert within(_result((9, "Ada")), tied, Tolerance())  # columns in another order
    assert not within(_result(("Eve", 3)), tied, Tolerance())  # any row, as a pinned ORDER BY returns
    assert not within(_result(), tied, Tolerance())


def test_a_moved_name_still_matches_the_gold_like_patterns() -> None:
    names = ["Jackson", "Smithson", "Ada", "Bola", "Chen", "Kemi", "Liu", "Hugo"]
    tables = {"p": TableData("p", ["id", "name"], [(i, n) for i, n in enumerate(names, 1)])}
    keep = Protected.of({"%ckson", "%hen", "kem%"}, None)  # each crosses its name's middle
    out = perturb(tables, {"p"}, "seed", keep=keep)
    moved = [name for _, name in out["p"]]
    assert not set(moved) & set(names)  # every name moved: `name IN ('Jackson', ...)` picks nothing
    for name in moved:
        original = name.replace("~", "")
        assert original.endswith("ckson") == name.endswith("ckson")
        assert original.endswith("hen") == name.endswith("hen")
        assert original.startswith("Kem") == name.startswith("Kem")


DENSE_TOP = list(range(2**15 - 8, 2**15))  # every value of the range taken, at the top of SMALLINT


@pytest.mark.parametrize(
    ("kind", "ids", "moves"),
    [
        ("INTEGER", [1, 2, 3, 40], True),
        # free points inside the range: ids move there, however narrow the type (issue 44)
        ("INTEGER", [1, 2, 3, 2**30 + 5], True),
        ("SMALLINT", [1, 2, 3, 17_000], True),
        # none free inside: shifted past the top where the type holds that, else left
        ("SMALLINT", [1, 2, 3, 4], True),
        ("SMALLINT", DENSE_TOP, False),
        ("BIGINT", DENSE_TOP, True),
        ("", [1, 2, 3, 2**40], True),
    ],
)
def test_ids_move_only_as_far_as_their_engine_type_holds(kind: str, ids: list[int], moves: bool) -> None:
    table = TableData("t", ["id"], [(i,) for i in ids], types=[kind] if kind else [])
    out = {row[0] for row in perturb({"t": table}, {"t"}, "seed")["t"]}
    assert max(out) <= (2**31 - 1 if kind == "INTEGER" else 2**15 - 1 if kind == "SMALLINT" else 2**62)
    assert (not out & set(ids)) is moves
