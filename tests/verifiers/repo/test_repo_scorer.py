"""The repo task end to end on a tiny project: verdicts, statuses, hidden tests, the base kept intact."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from repo_support import (
    CALC,
    FAIL_TO_PASS,
    GOLD,
    PASS_TO_PASS,
    TESTS,
    calc_change,
    canary_seed,
    diff,
    git,
    item,
)

from assay.settings import RepoSettings, Settings
from assay.types import Item, Result, Status
from assay.verifiers.repo import RepoOptions, RepoScorer

Score = Callable[..., Result]


def test_gold_change_is_rewarded(score: Score) -> None:
    result = score(item(GOLD))
    assert result.status is Status.OK and result.reward == 1.0 and result.correct, result
    assert result.details["fail_to_pass"] == {"passed": 1, "total": 1}
    assert result.details["pass_to_pass"] == {"passed": 2, "total": 2}


def test_gold_change_in_a_diff_fence_among_prose_is_found(score: Score) -> None:
    response = f"The bug is in mul.\n\n```diff\n{GOLD}```\nThat should do it."
    assert score(item(response)).reward == 1.0


def test_empty_change_fails_the_fail_to_pass_test(score: Score) -> None:
    result = score(item("I could not find the bug."))
    assert result.status is Status.OK and result.reward == 0.0
    assert result.details["not_passed"] == {FAIL_TO_PASS[0]: "failed"}


def test_fixing_a_different_function_is_not_rewarded(score: Score) -> None:
    result = score(item(calc_change("return a + b", "return b + a")))
    assert result.status is Status.OK and result.reward == 0.0


def test_breaking_a_pass_to_pass_test_is_not_rewarded(score: Score) -> None:
    fixed_and_broken = diff("calc/__init__.py", CALC, CALC.replace("+ 1", "").replace("a + b", "a - b"))
    result = score(item(fixed_and_broken))
    assert result.reward == 0.0 and result.details["not_passed"] == {PASS_TO_PASS[0]: "failed"}


def test_partial_rewards_the_fraction_of_named_tests(
    score: Score, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A canary drawn to expect the bug's 13 would pass and make the reward 0 (test_repo_verdict.py):
    # the draw is pinned to one where none does.
    from assay.verifiers.repo import scorer as scorer_module

    seed = canary_seed(tmp_path, meets_the_bug=False)
    monkeypatch.setattr(scorer_module.secrets, "randbits", lambda bits: seed)
    result = score(item("", options={"partial": True}))
    assert result.status is Status.OK and result.correct is False
    assert result.reward == 2 / 3


def test_a_change_that_does_not_apply_is_ok_with_reward_zero(score: Score) -> None:
    stale = calc_change("return a * b + 1", "return a * b").replace("a * b + 1", "a * b + 2", 1)
    result = score(item(stale))
    assert result.status is Status.OK and result.reward == 0.0
    assert "does not apply" in result.reason


def test_swe_bench_fields_with_json_text_test_lists(score: Score) -> None:
    raw = item(GOLD, instance_id="calc__calc-1", patch=GOLD)
    raw["FAIL_TO_PASS"] = json.dumps(FAIL_TO_PASS)
    raw["PASS_TO_PASS"] = json.dumps(PASS_TO_PASS)
    assert score(raw).reward == 1.0


def test_base_commit_is_checked_out(score: Score, repos: Path) -> None:
    repo = repos / "calc"
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc/__init__.py").write_text(CALC.replace("+ 1", ""))  # a later, fixed state
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "fixed")
    assert score(item("")).reward == 1.0  # HEAD is fixed
    assert score(item("", base_commit=base)).reward == 0.0
    assert score(item(GOLD, base_commit=base)).reward == 1.0


def test_hidden_test_patch_is_applied_and_its_tests_count(score: Score) -> None:
    hidden_test = "from calc import mul\n\n\ndef test_mul_zero():\n    assert mul(0, 5) == 0\n"
    test_patch = diff("tests/test_hidden.py", None, hidden_test)
    raw = item(GOLD, test_patch=test_patch, FAIL_TO_PASS=["tests/test_hidden.py::test_mul_zero"])
    assert score(raw).reward == 1.0
    assert score({**raw, "response": ""}).reward == 0.0


def test_hidden_test_patch_overrides_what_the_change_wrote_there(score: Score) -> None:
    hidden_test = "from calc import mul\n\n\ndef test_mul_zero():\n    assert mul(0, 5) == 0\n"
    test_patch = diff("tests/test_hidden.py", None, hidden_test)
    cheat = diff("tests/test_hidden.py", None, "def test_mul_zero():\n    pass\n")
    raw = item(cheat, test_patch=test_patch, FAIL_TO_PASS=["tests/test_hidden.py::test_mul_zero"])
    flagged = score(raw)
    assert flagged.reward == 0.0 and "edits_hidden_tests:tests/test_hidden.py" in flagged.details["flags"]
    allowed = score({**raw, "options": {"reward_test_edits": True}})
    assert allowed.reward == 0.0  # the hidden file replaced the cheat, and mul is still wrong
    assert "edits_hidden_tests:tests/test_hidden.py" in allowed.details["flags"]


def test_a_hidden_test_patch_that_does_not_apply_is_invalid(score: Score) -> None:
    broken = diff("tests/test_calc.py", TESTS.replace("5", "6"), TESTS)
    assert score(item(GOLD, test_patch=broken)).status is Status.INVALID


def test_bad_items_are_invalid_not_zero(score: Score) -> None:
    assert score(item(GOLD, repo="nope")).status is Status.INVALID
    assert score(item(GOLD, repo="../calc")).status is Status.INVALID
    assert score(item(GOLD, repo="/etc")).status is Status.INVALID
    assert score(item(GOLD, FAIL_TO_PASS="[not json")).status is Status.INVALID
    assert score(item(GOLD, FAIL_TO_PASS=[], PASS_TO_PASS=[])).status is Status.INVALID
    assert score(item(GOLD, test_cmd="make test")).status is Status.INVALID
    assert score(item(GOLD, base_commit="f" * 40)).status is Status.INVALID
    assert score(item(GOLD, FAIL_TO_PASS=["../x.py::t"])).status is Status.INVALID


def test_no_repository_root_is_invalid_and_says_what_to_set(prefix: Path) -> None:
    scorer = RepoScorer(Settings(repo=RepoSettings(repos=None, python_prefix=prefix)))
    result = scorer.score(Item.model_validate(item(GOLD)), RepoOptions())
    assert result.status is Status.INVALID and "ASSAY_REPOS" in result.reason


def test_repos_setting_reads_assay_repos(monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ASSAY_REPOS", str(tmp_path))
    assert Settings().repo.repos == tmp_path


def test_a_prefix_without_pytest_is_an_error_never_zero(repos: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty-prefix"
    empty.mkdir()
    scorer = RepoScorer(Settings(repo=RepoSettings(repos=repos, python_prefix=empty)))
    result = scorer.score(Item.model_validate(item(GOLD)), RepoOptions())
    assert result.status is Status.ERROR and result.reward is None and "pytest" in result.reason


def test_missing_bwrap_is_an_error(repos: Path, prefix: Path) -> None:
    settings = Settings(
        repo=RepoSettings(repos=repos, python_prefix=prefix), code={"bwrap_path": "/nonexistent"}
    )
    result = RepoScorer(settings).score(Item.model_validate(item(GOLD)), RepoOptions())
    assert result.status is Status.ERROR and result.reward is None


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_the_base_repository_is_never_written(score: Score, repos: Path) -> None:
    before = _tree(repos / "calc")
    writer = calc_change("return a + b", "open(__file__, 'a').write('#x')\n    return a + b")
    score(item(writer))
    score(item(GOLD))
    assert _tree(repos / "calc") == before
    assert sorted(p.name for p in repos.iterdir()) == ["calc"]


def test_plain_tree_without_git_works(tmp_path: Path, prefix: Path) -> None:
    root = tmp_path / "plain"
    (root / "calc" / "calc").mkdir(parents=True)
    (root / "calc" / "tests").mkdir()
    (root / "calc" / "calc" / "__init__.py").write_text(CALC)
    (root / "calc" / "tests" / "test_calc.py").write_text(TESTS)
    scorer = RepoScorer(Settings(repo=RepoSettings(repos=root, python_prefix=prefix)))
    assert scorer.score(Item.model_validate(item(GOLD)), RepoOptions()).reward == 1.0


def test_src_layout_is_importable(tmp_path: Path, prefix: Path) -> None:
    from repo_support import make_repo

    root = tmp_path / "src-layout"
    make_repo(root, files={"src/calc/__init__.py": CALC, "tests/test_calc.py": TESTS})
    scorer = RepoScorer(Settings(repo=RepoSettings(repos=root, python_prefix=prefix)))
    gold = diff("src/calc/__init__.py", CALC, CALC.replace("+ 1", ""))
    assert scorer.score(Item.model_validate(item(gold)), RepoOptions()).reward == 1.0


def test_a_change_that_stops_the_hidden_tests_applying_is_zero_not_invalid(score: Score) -> None:
    hidden = diff("tests/new/test_h.py", None, "def test_h():\n    assert True\n")
    blocker = GOLD + diff("tests/new", None, "a file where the hidden tests need a directory\n")
    raw = item(blocker, test_patch=hidden, FAIL_TO_PASS=["tests/new/test_h.py::test_h"])
    result = score({**raw, "options": {"reward_test_edits": True}})
    assert result.status is Status.OK and result.reward == 0.0
    assert "hidden test patch does not apply after the change" in result.reason


def test_repo_items_through_the_service(repos: Path, prefix: Path) -> None:
    from fastapi.testclient import TestClient

    from assay.api import create_app

    settings = Settings(workers=1, repo=RepoSettings(repos=repos, python_prefix=prefix))
    with TestClient(create_app(settings)) as client:
        tasks = {t["name"]: t for t in client.get("/v1/tasks").json()["tasks"]}
        assert "FAIL_TO_PASS" in tasks["repo"]["item_fields"]
        items = [{**item(GOLD), "id": "gold"}, {**item(""), "id": "empty"}, {**item(GOLD, repo="nope")}]
        results = client.post("/v1/rewards", json={"items": items}).json()["results"]
        assert [(r["status"], r["reward"]) for r in results] == [("ok", 1.0), ("ok", 0.0), ("invalid", None)]
