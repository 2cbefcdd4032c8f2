"""The ranking objective against naver/splade's training loss, transcribed from its code (HEAD 8dcd33a) on fixed
tensors: ``splade/tasks/transformer_trainer.py`` (``train_iterations``: the loop over ``self.regularizer["train"]``
and the averaging of positives and negatives), ``splade/losses/regularization.py`` (``FLOPS``, ``L1``,
``RegWeightScheduler``), ``splade/losses/pairwise.py`` (``DistilKLLoss``), with the regulariser dict in the YAML's
order (``splade/train.py``: FLOPS on documents, then L1 on queries, as every efficient SPLADE V / VI-BT config lists
them). With ``regularizer.naver_sum`` our total equals naver's to 1e-6 at steps 1, T/2, T and 2T; without it, it
does not."""

from __future__ import annotations

import pytest
import torch
from conftest import REPO

from lsr_eval.train.config import load_config
from lsr_eval.train.data import Example
from lsr_eval.train.ranking import objective

B, V = 4, 12
CONFIGS = [f"efficient-splade-{kind}-{size}.yaml" for kind in ("V", "VI-BT") for size in ("small", "medium", "large")]


# -- naver/splade, transcribed ----------------------------------------------------------------------------------
class L1:
    def __call__(self, batch_rep):
        return torch.sum(torch.abs(batch_rep), dim=-1).mean()


class FLOPS:
    def __call__(self, batch_rep):
        return torch.sum(torch.mean(torch.abs(batch_rep), dim=0) ** 2)


class RegWeightScheduler:
    def __init__(self, lambda_, T):
        self.lambda_ = lambda_
        self.T = T
        self.t = 0
        self.lambda_t = 0

    def step(self):
        if self.t >= self.T:
            pass
        else:
            self.t += 1
            self.lambda_t = self.lambda_ * (self.t / self.T) ** 2
        return self.lambda_t


class DistilKLLoss:
    def __init__(self):
        self.loss = torch.nn.KLDivLoss(reduction="none")

    def __call__(self, out_d):
        pos_scores, neg_scores = out_d["pos_score"], out_d["neg_score"]
        teacher_pos_scores, teacher_neg_scores = out_d["teacher_pos_score"], out_d["teacher_neg_score"]
        scores = torch.cat([pos_scores, neg_scores], dim=1)
        local_scores = torch.log_softmax(scores, dim=1)
        teacher_scores = torch.cat([teacher_pos_scores.unsqueeze(-1), teacher_neg_scores.unsqueeze(-1)], dim=1)
        teacher_scores = torch.softmax(teacher_scores, dim=1)
        return self.loss(local_scores, teacher_scores).sum(dim=1).mean(dim=0)


def naver_regularizer(lambda_d: float, lambda_q: float, T: int) -> dict:
    """``splade/train.py``'s ``regularizer["train"]`` for a config listing FLOPS (lambda_d) then L1 (lambda_q)."""
    config = {"FLOPS": {"lambda_d": lambda_d, "T": T, "targeted_rep": "rep", "reg": "FLOPS"},
              "L1": {"lambda_q": lambda_q, "T": T, "targeted_rep": "rep", "reg": "L1"}}
    losses = {"FLOPS": FLOPS(), "L1": L1()}
    train = {}
    for reg in config:
        temp = {"loss": losses[config[reg]["reg"]], "targeted_rep": config[reg]["targeted_rep"]}
        d_ = {}
        if "lambda_q" in config[reg]:
            d_["lambda_q"] = RegWeightScheduler(config[reg]["lambda_q"], config[reg]["T"])
        if "lambda_d" in config[reg]:
            d_["lambda_d"] = RegWeightScheduler(config[reg]["lambda_d"], config[reg]["T"])
        temp["lambdas"] = d_
        train[reg] = temp
    return {"train": train}


def naver_iteration(regularizer: dict, out: dict) -> torch.Tensor:
    """One iteration's loss of ``TransformerTrainer.train_iterations`` (gradient accumulation 1, one GPU)."""
    loss = DistilKLLoss()(out).mean()
    regularization_losses = {}
    for reg in regularizer["train"]:
        lambdas = regularizer["train"][reg]["lambdas"]
        lambda_q = lambdas["lambda_q"].step() if "lambda_q" in lambdas else False
        lambda_d = lambdas["lambda_d"].step() if "lambda_d" in lambdas else False
        targeted_rep = regularizer["train"][reg]["targeted_rep"]
        regularization_losses[reg] = 0
        if lambda_q:
            regularization_losses[reg] += (regularizer["train"][reg]["loss"](
                out[f"pos_q_{targeted_rep}"]) * lambda_q).mean()
        if lambda_d:
            regularization_losses[reg] += ((regularizer["train"][reg]["loss"](
                out[f"pos_d_{targeted_rep}"]) * lambda_d).mean() +
                                           (regularizer["train"][reg]["loss"](
                                               out[f"neg_d_{targeted_rep}"]) * lambda_d).mean()) / 2
        loss += sum(regularization_losses.values())   # inside the loop, as in naver/splade
    return loss


# -- fixed tensors ----------------------------------------------------------------------------------------------
def tensors() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[float], list[float]]:
    """Query, positive and negative SPLADE vectors (non-negative, some zeros) and teacher scores, fixed."""
    g = torch.Generator().manual_seed(7)
    q, pos, neg = (torch.relu(torch.randn(B, V, generator=g, dtype=torch.float64)) * 2 for _ in range(3))
    t_pos = [3.0, -1.0, 0.5, 2.0]
    t_neg = [1.0, 0.0, 2.5, -2.0]
    return q, pos, neg, t_pos, t_neg


def naver_out(q, pos, neg, t_pos, t_neg) -> dict[str, torch.Tensor]:
    """``TransformerTrainer.forward``'s dict: each model call's ``score`` (B x 1) and ``q_rep`` / ``d_rep``."""
    return {"pos_q_rep": q, "pos_d_rep": pos, "neg_q_rep": q, "neg_d_rep": neg,
            "pos_score": (q * pos).sum(-1, keepdim=True), "neg_score": (q * neg).sum(-1, keepdim=True),
            "teacher_pos_score": torch.tensor(t_pos, dtype=torch.float64),
            "teacher_neg_score": torch.tensor(t_neg, dtype=torch.float64)}


def deviations(config: str, naver_sum: bool) -> dict[int, float]:
    """|ours - naver's| of the total loss at steps 1, T/2, T and 2T of ``config`` (naver's schedulers stepped once
    per iteration from the start, as its loop does)."""
    cfg = load_config(REPO / "pipelines" / "train" / config, [f"regularizer.naver_sum={str(naver_sum).lower()}"])
    reg = cfg.regularizer
    assert reg.warmup_q == reg.warmup_d and (reg.query, reg.document) == ("l1", "flops")
    T = reg.warmup_d
    q, pos, neg, t_pos, t_neg = tensors()
    examples = [Example(str(i), "q", f"p{i}", "p", (f"n{i}",), ("n",), frozenset({f"p{i}"}), t_pos[i], (t_neg[i],))
                for i in range(B)]
    wd = torch.cat([pos, neg])                        # slot-major: the B positives, then the B negatives
    naver = naver_regularizer(reg.lambda_d, reg.lambda_q, T)
    out = naver_out(q, pos, neg, t_pos, t_neg)
    found = {}
    for step in range(1, 2 * T + 1):
        if step in (1, T // 2, T, 2 * T):
            theirs = naver_iteration(naver, out).item()
            ours = objective(q, wd, examples, cfg, step)["loss"].item()
            found[step] = abs(ours - theirs)
        else:                                         # the schedulers advance every iteration
            for reg_ in naver["train"].values():
                for scheduler in reg_["lambdas"].values():
                    scheduler.step()
    return found


@pytest.mark.parametrize("config", CONFIGS)
def test_naver_sum_is_naver_losses_at_steps_1_half_t_t_and_2t(config):
    found = deviations(config, naver_sum=True)
    assert sorted(found) == [1, 25000, 50000, 100000]
    assert max(found.values()) < 1e-6, found


@pytest.mark.parametrize("config", CONFIGS)
def test_without_naver_sum_the_losses_differ(config):
    """The check can fail: lambda_d counted once misses naver's total by lambda_d(t) x FLOPS(documents), far above
    1e-6 from T/2 on (at step 1, lambda_d(1) = lambda_d / T^2 is ~1e-13 and the two agree)."""
    found = deviations(config, naver_sum=False)
    assert max(found.values()) > 1e-6
    assert all(found[s] > 1e-6 for s in (25000, 50000, 100000)), found


def test_the_transcription_counts_flops_twice_and_l1_once():
    """naver's loop by hand at a step past T: rank + 2 lambda_d FLOPS + lambda_q L1."""
    q, pos, neg, t_pos, t_neg = tensors()
    out = naver_out(q, pos, neg, t_pos, t_neg)
    naver = naver_regularizer(0.5, 0.25, 1)
    rank = DistilKLLoss()(out).item()
    flops = ((FLOPS()(pos) + FLOPS()(neg)) / 2).item()
    assert naver_iteration(naver, out).item() == pytest.approx(rank + 2 * 0.5 * flops + 0.25 * L1()(q).item(),
                                                               rel=1e-12)
