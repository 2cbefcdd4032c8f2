"""Losses, regularisers, sparsity statistics and schedules against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from lsr_eval.train.losses import info_nce, kl_div, margin_mse
from lsr_eval.train.regularizers import flops, l1, regularize, sparsity_stats
from lsr_eval.train.schedule import lr_factor, lr_lambda, reg_weight

E = math.e


def test_info_nce_by_hand():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    d = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    # scores q0: [1, 0, 1], q1: [0, 2, 1]; targets 0 and 1
    expected = ((math.log(2 * E + 1) - 1) + (math.log(1 + E + E ** 2) - 2)) / 2
    out = info_nce(q @ d.T, torch.tensor([0, 1]))
    assert set(out) == {"rank"}
    assert out["rank"].item() == pytest.approx(expected, rel=1e-6)


def test_info_nce_mask_removes_false_negatives_but_never_the_target():
    scores = torch.tensor([[1.0, 0.0, 1.0], [0.0, 2.0, 1.0]])
    mask = torch.tensor([[True, False, True], [False, True, False]])  # the targets are masked too: kept anyway
    expected = ((math.log(E + 1) - 1) + (math.log(1 + E + E ** 2) - 2)) / 2
    assert info_nce(scores, torch.tensor([0, 1]), mask)["rank"].item() == pytest.approx(expected, rel=1e-6)


def test_margin_mse_by_hand():
    pos, neg = torch.tensor([3.0, 1.0]), torch.tensor([[1.0], [2.0]])
    t_pos, t_neg = torch.tensor([2.0, 0.0]), torch.tensor([[1.0], [0.0]])
    # student margins 2, -1; teacher margins 1, 0 -> squared errors 1, 1
    assert margin_mse(pos, neg, t_pos, t_neg)["rank"].item() == pytest.approx(1.0)
    # two negatives: margins (3-1, 3-0) vs teacher (1, 3): errors 1, 0 -> mean 0.5
    out = margin_mse(torch.tensor([3.0]), torch.tensor([[1.0, 0.0]]), torch.tensor([4.0]), torch.tensor([[3.0, 1.0]]))
    assert out["rank"].item() == pytest.approx(0.5)


def test_kl_div_by_hand():
    # teacher softmax([log 3, 0]) = [3/4, 1/4]; student softmax([0, 0]) = [1/2, 1/2]
    out = kl_div(torch.tensor([0.0]), torch.tensor([[0.0]]), torch.tensor([math.log(3)]), torch.tensor([[0.0]]))
    assert out["rank"].item() == pytest.approx(0.75 * math.log(1.5) + 0.25 * math.log(0.5), rel=1e-6)
    same = kl_div(torch.tensor([2.0, 1.0]), torch.tensor([[1.0], [3.0]]), torch.tensor([2.0, 1.0]),
                  torch.tensor([[1.0], [3.0]]))
    assert same["rank"].item() == pytest.approx(0.0, abs=1e-7)


def test_flops_and_l1_values_and_gradient():
    w = torch.tensor([[1.0, 0.0, 2.0], [3.0, 0.0, 0.0]], requires_grad=True)
    f = flops(w)  # column means [2, 0, 1] -> 4 + 0 + 1
    assert f.item() == pytest.approx(5.0)
    f.backward()
    # dF/dw_ij = 2 m_j sign(w_ij) / N
    assert torch.equal(w.grad, torch.tensor([[2.0, 0.0, 1.0], [2.0, 0.0, 0.0]]))
    assert l1(torch.tensor([[1.0, -2.0], [0.0, 3.0]])).item() == pytest.approx(3.0)
    assert flops(torch.tensor([[-1.0, 2.0], [1.0, 0.0]])).item() == pytest.approx(1.0 + 1.0)


def test_document_flops_is_averaged_per_slot():
    w = torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0], [0.0, 4.0]])
    # slot 0 (positives): means [2, 0] -> 4; slot 1 (negatives): means [0, 3] -> 9; pooled would be 3.25
    assert regularize("flops", w, slots=2).item() == pytest.approx(6.5)
    assert regularize("flops", w, slots=1).item() == pytest.approx(3.25)
    assert regularize("none", w) is None


def test_sparsity_stats_by_hand():
    q = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    d = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    # p_q = [1, .5, 0], p_d = [.5, 0, 1] -> sum p_q p_d = .5
    assert sparsity_stats(q, d) == {"active_dims_q": 1.5, "active_dims_d": 1.5, "flops": 0.5}


def test_regulariser_weight_warms_up_quadratically():
    assert [reg_weight(1.0, 4, t) for t in range(7)] == [0.0, 1 / 16, 4 / 16, 9 / 16, 1.0, 1.0, 1.0]
    assert reg_weight(5e-3, 50000, 25000) == pytest.approx(5e-3 / 4)
    assert reg_weight(0.3, 0, 1) == 0.3


def test_learning_rate_schedule():
    assert [lr_factor(t, 2, 6) for t in range(1, 7)] == [0.5, 1.0, 1.0, 0.75, 0.5, 0.25]
    assert [lr_factor(t, 2, 6, "constant") for t in range(1, 7)] == [0.5, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert [lr_factor(t, 0, 4) for t in range(1, 5)] == [1.0, 0.75, 0.5, 0.25]
    assert lr_factor(7, 2, 6) == 0.0
    # LambdaLR counts the scheduler steps taken: optimizer step t uses count t - 1
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=2.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(2, 6, "linear"))
    used = []
    for _ in range(6):
        used.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert used == [1.0, 2.0, 2.0, 1.5, 1.0, 0.5]
    with pytest.raises(ValueError, match="linear, constant"):
        lr_lambda(2, 6, "cosine")
