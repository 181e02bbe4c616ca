"""Rust and Go through the code scorer: Debian's toolchains, compiled once per submission like C++."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from assay_testing import code_scorer

from assay.sandbox import lookup
from assay.types import Item, Result
from assay.verifiers.code import CodeScorer

SUM = [{"stdin": "2 3\n", "stdout": "5\n"}, {"stdin": "10 -4\n", "stdout": "6\n"}]
PROGRAMS = {
    "rust": {
        "right": "use std::io::Read;\nfn main() {\n    let mut s = String::new();\n"
        "    std::io::stdin().read_to_string(&mut s).unwrap();\n"
        "    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n"
        '    println!("{}", v[0] + v[1]);\n}\n',
        # volatile: -O would fold a plain counting loop away
        "loop": "fn main() { let x = 1u8; while unsafe { std::ptr::read_volatile(&x) } == 1 {} }\n",
        "panic": 'fn main() { panic!("boom"); }\n',
        "broken": "fn main() { let x: i32 = ; }\n",
    },
    "go": {
        "right": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar a, b int\n\tfmt.Scan(&a, &b)\n'
        "\tfmt.Println(a + b)\n}\n",
        "loop": "package main\n\nfunc main() {\n\tx := 0\n\tfor {\n\t\tx++\n\t}\n}\n",
        "panic": 'package main\n\nfunc main() {\n\tpanic("boom")\n}\n',
        "broken": "package main\n\nfunc main() {\n\tx := \n}\n",
    },
}


def available(language: str) -> bool:
    lang = lookup(language)
    return lang is not None and lang.available()


@pytest.fixture(scope="module")
def scorer() -> Iterator[CodeScorer]:
    yield from code_scorer(slots=1, tmpfs_mb=128, time_limit_s=1, memory_mb=256)


def score(scorer: CodeScorer, language: str, program: str) -> Result:
    item = Item(task="code", language=language, response=f"```{language}\n{program}```", tests=SUM)
    return scorer.score(item, CodeScorer.parse_options({}))


@pytest.mark.parametrize("language", ["rust", "go"])
def test_verdicts(scorer: CodeScorer, language: str) -> None:
    if not available(language):
        pytest.fail(f"{language} toolchain missing: run scripts/system-deps.sh (make test does)")
    programs = PROGRAMS[language]
    right = score(scorer, language, programs["right"])
    assert right.reward == 1.0, right.details
    again = score(scorer, language, programs["right"])
    assert again.reward == 1.0 and again.details.get("cached_build")  # compiled once
    verdicts = {kind: score(scorer, language, programs[kind]) for kind in ("loop", "panic", "broken")}
    assert [t["verdict"] for t in verdicts["loop"].details["tests"]] == ["time_limit"] * 2
    assert [t["verdict"] for t in verdicts["panic"].details["tests"]] == ["runtime_error"] * 2
    assert "boom" in verdicts["panic"].details["tests"][0]["stderr"]
    assert verdicts["broken"].reason == "compile error" and verdicts["broken"].reward == 0.0
