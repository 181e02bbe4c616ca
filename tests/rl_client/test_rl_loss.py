"""Advantages, clipping, the three aggregations and KL, against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from assay.rl_client.config import LossConfig
from assay.rl_client.loss import aggregate, group_advantages, importance_ratio, k3_kl, policy_loss


def test_advantages_are_mean_centred_without_std_scaling() -> None:
    assert group_advantages([1.0, 0.0, 0.0, 1.0], scale_std=False) == [0.5, -0.5, -0.5, 0.5]


def test_advantages_divide_by_the_sample_std() -> None:
    # mean 0.25; sample std = sqrt((0.5625 + 3 * 0.0625) / 3) = 0.5
    adv = group_advantages([1.0, 0.0, 0.0, 0.0], scale_std=True, eps=0.0)
    assert adv == pytest.approx([1.5, -0.5, -0.5, -0.5])


def test_unscored_samples_stay_out_of_the_group_statistics() -> None:
    # Only 1.0 and 0.0 count: mean 0.5. A None is not a 0: it would drag the mean to 1/3.
    assert group_advantages([1.0, None, 0.0], scale_std=False) == [0.5, 0.0, -0.5]


def test_a_group_with_fewer_than_two_scores_has_no_advantage() -> None:
    assert group_advantages([1.0, None, None], scale_std=True) == [0.0, 0.0, 0.0]


def test_clip_higher_is_asymmetric() -> None:
    cfg = LossConfig(aggregation="token", clip_low=0.2, clip_high=0.28)
    old = torch.zeros(1, 4)
    # ratios 1.5 and 0.5, each with a positive and a negative advantage
    logp = torch.log(torch.tensor([[1.5, 1.5, 0.5, 0.5]]))
    mask = torch.ones(1, 4)
    for adv, expected in ((1.0, [-1.28, -1.28, -0.5, -0.5]), (-1.0, [1.5, 1.5, 0.8, 0.8])):
        parts = policy_loss(logp, old, torch.tensor([adv]), mask, cfg, max_len=4)
        assert parts.loss.item() == pytest.approx(sum(expected) / 4)


def test_clip_fraction_counts_clipped_tokens() -> None:
    cfg = LossConfig()
    logp = torch.log(torch.tensor([[1.5, 1.0, 0.5, 1.1]]))
    parts = policy_loss(logp, torch.zeros(1, 4), torch.tensor([1.0]), torch.ones(1, 4), cfg, 4)
    assert parts.clip_fraction == pytest.approx(0.5)


LOSS = torch.tensor([[1.0, 2.0, 3.0, 0.0], [4.0, 0.0, 0.0, 0.0]])
MASK = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])


def test_token_aggregation_weighs_every_token_equally() -> None:
    assert aggregate(LOSS, MASK, "token", max_len=4).item() == pytest.approx((1 + 2 + 3 + 4) / 4)


def test_sequence_aggregation_averages_per_response_first() -> None:
    assert aggregate(LOSS, MASK, "sequence", max_len=4).item() == pytest.approx((2.0 + 4.0) / 2)


def test_dr_grpo_divides_by_responses_times_budget() -> None:
    assert aggregate(LOSS, MASK, "dr_grpo", max_len=4).item() == pytest.approx(10 / (2 * 4))


def test_rows_without_mask_do_not_count_as_responses() -> None:
    mask = torch.cat([MASK, torch.zeros(1, 4)])
    loss = torch.cat([LOSS, torch.full((1, 4), 100.0)])
    assert aggregate(loss, mask, "sequence", 4).item() == pytest.approx(3.0)
    assert aggregate(loss, mask, "dr_grpo", 4).item() == pytest.approx(10 / 8)


def test_micro_batches_with_batch_counts_add_up_to_the_whole() -> None:
    for mode in ("token", "sequence", "dr_grpo"):
        whole = aggregate(LOSS, MASK, mode, 4).item()
        parts = sum(
            aggregate(LOSS[i : i + 1], MASK[i : i + 1], mode, 4, n_tokens=4, n_seqs=2).item() for i in (0, 1)
        )
        assert parts == pytest.approx(whole), mode


def test_importance_ratio_of_off_policy_rows_is_against_the_behaviour_policy_and_capped() -> None:
    cfg = LossConfig(max_is_ratio=2.0, clip_high=10.0)
    behaviour = torch.log(torch.tensor([[0.2, 0.5]]))
    current = torch.log(torch.tensor([[0.3, 0.9]]))  # ratios 1.5 and 1.8 -> both under the cap
    assert importance_ratio(current, behaviour) == pytest.approx(torch.tensor([[1.5, 1.8]]))
    far = torch.log(torch.tensor([[0.9, 0.9]]))  # ratios 4.5 and 1.8 -> 4.5 capped at 2
    parts = policy_loss(far, behaviour, torch.tensor([1.0]), torch.ones(1, 2), cfg, 2, torch.tensor([True]))
    assert parts.loss.item() == pytest.approx(-(2.0 + 1.8) / 2)
    uncapped = policy_loss(
        far, behaviour, torch.tensor([1.0]), torch.ones(1, 2), cfg, 2, torch.tensor([False])
    )
    assert uncapped.loss.item() == pytest.approx(-(4.5 + 1.8) / 2)


def test_k3_kl_is_zero_at_the_reference_and_positive_elsewhere() -> None:
    logp = torch.log(torch.tensor([0.5, 0.5]))
    assert k3_kl(logp, logp).tolist() == [0.0, 0.0]
    ref = torch.log(torch.tensor([0.25, 0.75]))
    expected = [math.exp(math.log(0.5)) - math.log(0.5) - 1, math.exp(math.log(1.5)) - math.log(1.5) - 1]
    assert k3_kl(logp, ref).tolist() == pytest.approx(expected)


def test_kl_term_is_added_with_its_coefficient() -> None:
    cfg = LossConfig(kl_coef=0.5)
    logp = torch.log(torch.tensor([[0.5]]))
    ref = torch.log(torch.tensor([[0.25]]))
    parts = policy_loss(logp, logp.detach(), torch.tensor([0.0]), torch.ones(1, 1), cfg, 1, ref_logp=ref)
    kl = 0.5 - math.log(0.5) - 1
    assert parts.loss.item() == pytest.approx(0.5 * kl)
    assert parts.kl == pytest.approx(kl)


def test_masked_rows_get_no_gradient() -> None:
    logp = torch.zeros(2, 3, requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    parts = policy_loss(logp, logp.detach(), torch.tensor([1.0, 5.0]), mask, LossConfig(), 3)
    parts.loss.backward()
    assert logp.grad is not None
    assert logp.grad[1].abs().sum().item() == 0.0
    assert logp.grad[0].abs().sum().item() > 0.0
