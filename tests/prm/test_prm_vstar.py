"""A V-STaR verifier trained in the test (DPO on a tiny character GPT-2, `assay.rl_client.verifier`),
saved as a directory and scored through the `prm` task with `format: vstar` (issue 42 item 4)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.settings import Settings
from assay.types import Status

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

# prompt -> (the correct answer, wrong ones): the generator's own samples, as V-STaR collects them
SAMPLES = {"2+2=": ("4", ["5", "3"]), "3+5=": ("8", ["9", "6"]), "7+1=": ("8", ["7", "2"])}


@pytest.fixture(scope="module")
def verifier_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from assay.rl_client import verifier as dpo
    from assay.rl_client.runs.models import build_char_model, char_tokenizer

    torch.set_num_threads(1)
    tokenizer = char_tokenizer()
    candidates = [
        dpo.Candidate(prompt, answer, answer == right)
        for prompt, (right, wrong) in SAMPLES.items()
        for answer in [right, *wrong]
    ]
    pairs = dpo.preference_pairs(candidates, per_prompt=4, seed=0)
    verifier, reference = (build_char_model(tokenizer, seed=0, width=32, layers=1) for _ in range(2))
    encoder = dpo.Encoder(tokenizer)
    report = dpo.train_dpo(verifier, reference, encoder, pairs, dpo.DpoSettings(beta=0.5, steps=40, batch=8))
    assert report.pair_accuracy == 1.0 and report.loss_last is not None and report.loss_last < 0.69
    return dpo.save(tmp_path_factory.mktemp("vstar") / "verifier", verifier, reference, tokenizer, 0.5,
                    True, report)  # fmt: skip


def test_a_trained_verifier_scores_candidates_through_the_prm_task(
    make_settings: Callable[..., Settings], verifier_dir: Path
) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from assay.engine.scoring import Engine
    from assay.rl_client import verifier as dpo

    items = [
        {"task": "prm", "prompt": prompt, "response": answer}
        for prompt, (right, wrong) in SAMPLES.items()
        for answer in [right, *wrong]
    ]
    prm = {"model": str(verifier_dir), "format": "vstar", "deadline_s": 60.0}
    with Engine(make_settings(workers=1, prm=prm)) as engine:
        results = engine.score(items)
    assert all(r.status is Status.OK for r in results), [r.reason for r in results]
    served = [r.details["vstar_score"] for r in results]
    for start in range(0, len(items), 3):  # each prompt: its correct answer ranks first
        right, *wrong = served[start : start + 3]
        assert all(right > w for w in wrong)
    assert [r.reward for r in results] == pytest.approx([1 / (1 + math.exp(-s)) for s in served])

    # the served score is the trainer's own: beta * (log p_verifier - log p_reference)
    tokenizer = AutoTokenizer.from_pretrained(str(verifier_dir))
    load = AutoModelForCausalLM.from_pretrained
    here = dpo.scores(
        load(str(verifier_dir)), load(str(verifier_dir / "reference")), dpo.Encoder(tokenizer),
        [(i["prompt"], i["response"]) for i in items], beta=0.5,
    )  # fmt: skip
    assert served == pytest.approx(here, abs=1e-4)


def test_a_directory_that_is_no_verifier_is_an_error(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    from assay.engine.scoring import Engine

    with Engine(make_settings(workers=1, prm={"model": str(tmp_path), "format": "vstar"})) as engine:
        (result,) = engine.score([{"task": "prm", "prompt": "2+2=", "response": "4"}])
    assert result.status is Status.ERROR and "vstar.json" in (result.reason or "")
