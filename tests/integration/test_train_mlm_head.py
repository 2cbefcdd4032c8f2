"""Completing an MLM head by masked-LM training: texts and hold-out, head-only training, masked-LM evaluation."""

from __future__ import annotations

import json
import math

import pytest
import torch
from conftest import write_beir
from tiny_models import BUILTIN_TEXT
from train_helpers import model_copy, read_log, tiny_beir_train

from lsr_eval.cli import main
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.models.loading import load_mlm
from lsr_eval.train.config import MiddleDataConfig, MiddleTrainConfig, from_dict
from lsr_eval.train.freeze import freeze_to_head
from lsr_eval.train.middle import mask_tokens, masked_logits
from lsr_eval.train.mlm_eval import MaskedLmScore, evaluate_masked_lm, score_masked
from lsr_eval.train.mlm_text import collect_texts, split_holdout
from lsr_eval.train.run import middle_train


# -- scores, by hand ---------------------------------------------------------------------------------------------
def test_accuracy_and_perplexity_by_hand():
    logits = torch.tensor([[2.0, 0.0, 0.0],      # label 0: top-1 right
                           [0.0, 1.0, 3.0],      # label 1: top-1 is 2, wrong
                           [0.0, 0.0, 0.0]])     # label 2: uniform; argmax is 0 (first), wrong
    labels = torch.tensor([0, 1, 2])
    s = score_masked(logits, labels)
    nll = [math.log(math.exp(2) + 2) - 2, math.log(1 + math.e + math.exp(3)) - 1, math.log(3)]
    assert (s.n, s.correct) == (3, 1)
    assert s.nll == pytest.approx(sum(nll), rel=1e-6)
    assert s.accuracy == pytest.approx(1 / 3)
    assert s.perplexity == pytest.approx(math.exp(sum(nll) / 3), rel=1e-6)
    # counts add up over batches, so the corpus figure is not a mean of batch means
    both = s + score_masked(torch.tensor([[0.0, 5.0, 0.0]]), torch.tensor([1]))
    assert (both.n, both.correct) == (4, 2)
    assert both.perplexity == pytest.approx(math.exp((sum(nll) + math.log(1 + 2 * math.exp(-5))) / 4), rel=1e-6)
    assert math.isnan(MaskedLmScore().accuracy) and score_masked(torch.zeros(0, 3), torch.zeros(0).long()).n == 0
    with pytest.raises(InputError, match="N x V"):
        score_masked(torch.zeros(2, 3), torch.zeros(3).long())


# -- texts and hold-out ------------------------------------------------------------------------------------------
def _two_folders(tmp_path):
    a = write_beir(tmp_path / "a", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(BUILTIN_TEXT)],
                   [{"_id": "q1", "text": "first query"}, {"_id": "q2", "text": BUILTIN_TEXT[0]},
                    {"_id": "q3", "text": "held for test"}],
                   [("q1", "d0", 1), ("q2", "d1", 1)], split="train")
    (a / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq3\td2\t1\n", encoding="utf-8")
    b = write_beir(tmp_path / "b", [{"_id": "x", "title": "T", "text": "another corpus"},
                                    {"_id": "y", "title": "", "text": "  "}], [], [], split="test")
    return str(a), str(b)


def test_texts_are_deduplicated_and_split_by_text(tmp_path):
    a, b = _two_folders(tmp_path)
    t = collect_texts(MiddleDataConfig(dataset=[a, b], queries=["train"], holdout=0.25, holdout_seed=3))
    c = t.counts
    # a: 12 docs + 2 train queries (one repeats doc 0 and is dropped); the test query is not read; b: 1 non-empty doc
    assert c["texts_read"] == 15 and c["duplicates_dropped"] == 1 and c["distinct_texts"] == 14
    queries = c["sources"][f"{a}:queries/train"]
    assert (queries["read"], queries["duplicates_dropped"]) == (2, 1)
    assert queries.get("train", 0) + queries.get("heldout", 0) == 1
    assert "held for test" not in t.train + t.heldout
    assert len(t.heldout) == round(0.25 * 14) == 4 and len(t.train) == 10
    assert not set(t.train) & set(t.heldout)
    again = collect_texts(MiddleDataConfig(dataset=[a, b], queries=["train"], holdout=0.25, holdout_seed=3))
    assert (again.train, again.heldout) == (t.train, t.heldout)                 # a function of data and seed
    other = collect_texts(MiddleDataConfig(dataset=[a, b], queries=["train"], holdout=0.25, holdout_seed=4))
    assert other.heldout != t.heldout
    assert sum(split_holdout(1000, 0.05, 0)) == 50
    with pytest.raises(InputError, match="split.*dev"):
        collect_texts(MiddleDataConfig(dataset=[a, b], queries=["dev"]))
    with pytest.raises(ConfigError, match=r"^holdout must be in \[0, 1\), got 1$"):
        MiddleDataConfig(dataset=a, holdout=1.0)


# -- head-only training and the masked-only head -----------------------------------------------------------------
def test_freeze_to_head_trains_the_transform_and_bias_only(tmp_path):
    mlm, _, _ = load_mlm(model_copy(tmp_path))
    counts = freeze_to_head(mlm)
    assert counts["trained"] == ["cls.predictions.bias", "cls.predictions.transform.dense.weight",
                                 "cls.predictions.transform.dense.bias", "cls.predictions.transform.LayerNorm.weight",
                                 "cls.predictions.transform.LayerNorm.bias"]
    assert not mlm.get_input_embeddings().weight.requires_grad        # tied decoder = input embeddings: frozen
    h = mlm.config.hidden_size
    assert counts["trainable_parameters"] == mlm.config.vocab_size + h * h + 3 * h


def test_masked_logits_equal_the_full_logits(tmp_path):
    mlm, tok, _ = load_mlm(model_copy(tmp_path))
    enc = tok(BUILTIN_TEXT[:4], padding=True, return_tensors="pt")
    selected = torch.rand(enc["input_ids"].shape, generator=torch.Generator().manual_seed(0)) < 0.3
    selected &= enc["attention_mask"].bool()
    with torch.no_grad():
        full = mlm(**enc).logits[selected]
        picked = masked_logits(mlm, enc["input_ids"], enc["attention_mask"], selected)
    assert picked.shape == full.shape and torch.allclose(picked, full, atol=1e-5)


def _head_config(tmp_path, name, steps=4, **train):
    beir, _ = tiny_beir_train(tmp_path) if not (tmp_path / "beir").exists() else (tmp_path / "beir", None)
    return from_dict(MiddleTrainConfig, {
        "model": {"path": str(model_copy(tmp_path, dropout=0.1)), "head_init": "random", "trainable": "head",
                  "max_length": 24},
        "data": {"dataset": str(beir), "queries": ["train"], "holdout": 0.25},
        "mlm": {"mask_prob": 0.3, "lambda_d": 0},
        "optim": {"lr": 1e-2, "warmup_steps": 1},
        "train": {"steps": steps, "batch_size": 4, "bf16": False, "seed": 9, "checkpoint_every": 0,
                  "progress": False, **train},
        "output": {"dir": str(tmp_path / "results" / name), "model_dir": str(tmp_path / "work" / name)}}, "test")


def test_head_only_training_resumes_exactly_and_keeps_the_encoder(tmp_path):
    full = middle_train(_head_config(tmp_path, "full"))
    split_cfg = _head_config(tmp_path, "split", checkpoint_every=2)
    assert middle_train(split_cfg, stop_after=2).status == "stopped"
    resumed = middle_train(split_cfg, resume=True)
    assert resumed.status == "done" and resumed.timings["steps_this_run"] == 2
    a, _, _ = load_mlm(full.final_model)
    b, _, report = load_mlm(resumed.final_model)
    assert report.applied == "loaded"                                # a masked LM with its own head
    start, _, _ = load_mlm(model_copy(tmp_path, dropout=0.1))
    pa, pb, p0 = ({k: v.detach() for k, v in m.named_parameters()} for m in (a, b, start))
    assert max(float((pa[k] - pb[k]).abs().max()) for k in pa) <= 1e-6
    encoder = [k for k in pa if k.startswith("bert.")]
    assert encoder and all(torch.equal(pa[k], p0[k]) for k in encoder)   # frozen: bit for bit
    assert float((pa["cls.predictions.transform.dense.weight"] - p0["cls.predictions.transform.dense.weight"])
                 .abs().max()) > 1e-3
    log_a, log_b = read_log(full.log_file), read_log(resumed.log_file)
    assert [r["step"] for r in log_b] == [1, 2, 3, 4]
    for ra, rb in zip(log_a, log_b):
        assert rb["mlm"] == pytest.approx(ra["mlm"], rel=1e-5) and "flops_d" not in ra   # masked-only head
    manifest = json.loads((tmp_path / "results" / "full" / "manifest.json").read_text())
    assert manifest["data"]["heldout_texts"] == 6 and manifest["data"]["train_texts"] == 18   # 12 docs + 12 queries
    assert manifest["init"]["model"]["extra"]["trainable"]["trainable"] == "head"


def test_evaluation_is_deterministic_and_matches_the_full_logits(tmp_path):
    mlm, tok, _ = load_mlm(model_copy(tmp_path))
    texts = BUILTIN_TEXT * 2
    s = evaluate_masked_lm(mlm, tok, texts, mask_prob=0.3, max_length=24, seed=1, batch_size=5)
    assert s == evaluate_masked_lm(mlm, tok, texts, mask_prob=0.3, max_length=24, seed=1, batch_size=5)
    # the same masks by hand, scored on the full logits
    import numpy as np

    special = torch.tensor(sorted(set(tok.all_special_ids)))
    n = correct = 0
    nll = 0.0
    for b, start in enumerate(range(0, len(texts), 5)):
        enc = tok(texts[start:start + 5], padding=True, truncation=True, max_length=24, return_tensors="pt")
        gen = torch.Generator().manual_seed(int(np.random.SeedSequence([1, b]).generate_state(1)[0]))
        masked, labels = mask_tokens(enc["input_ids"], enc["attention_mask"], torch.isin(enc["input_ids"], special),
                                     tok.mask_token_id, len(tok), 0.3, gen)
        with torch.no_grad():
            logits = mlm(input_ids=masked, attention_mask=enc["attention_mask"]).logits
        sel = labels != -100
        n += int(sel.sum())
        correct += int((logits[sel].argmax(1) == labels[sel]).sum())
        nll += float(torch.nn.functional.cross_entropy(logits[sel], labels[sel], reduction="sum"))
    assert (s.n, s.correct) == (n, correct) and s.nll == pytest.approx(nll, rel=1e-5)


def test_mlm_eval_command_scores_each_model_on_the_held_out_texts(tmp_path, capsys):
    cfg = _head_config(tmp_path, "cmd", steps=3)
    trained = middle_train(cfg).final_model
    import yaml

    path = tmp_path / "mid.yaml"
    path.write_text(yaml.safe_dump(cfg.to_dict()), encoding="utf-8")
    out = tmp_path / "eval"
    assert main(["mlm-eval", str(path), f"start={model_copy(tmp_path, dropout=0.1)}", f"trained={trained}",
                 "--head-init", "random", "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert list(metrics) == ["start", "trained"]
    assert metrics["start"]["n"] == metrics["trained"]["n"] > 0                  # the same masked positions
    assert metrics["trained"]["head_init"]["applied"] == "loaded"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stage"] == "mlm-eval" and manifest["counts"]["heldout_texts"] == 6
    assert "trained: accuracy" in capsys.readouterr().out
    assert main(["mlm-eval", str(path), "a=x", "a=y"]) == 2


def test_inspect_head_writes_its_diagnosis_with_a_manifest(tmp_path, capsys):
    out = tmp_path / "diag"
    assert main(["inspect-head", str(model_copy(tmp_path)), "--k", "1", "2", "--max-length", "24",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert (out / "diagnosis.txt").read_text().strip() == printed.strip()
    d = json.loads((out / "diagnosis.json").read_text())
    assert [r["k"] for r in d["rows"]] == [1.0, 2.0] and d["suggested_k"] >= 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stage"] == "inspect-head" and manifest["experiment"]["k"] == [1.0, 2.0]


# -- divergence and collapse of the grid's runs ------------------------------------------------------------------
def test_stability_criteria_by_hand():
    from lsr_eval.train.stability import stability

    def log(values):
        return [{"step": i + 1, "rank": v, "loss": 0.0, "grad_norm": float(i)} for i, v in enumerate(values)]

    healthy = stability(log([5.0] * 10 + [3.0] * 5 + [1.0] * 10), candidates=16)
    assert (healthy.first_rank, healthy.last_rank, healthy.steps) == (5.0, 1.0, 25)
    assert not healthy.diverged and not healthy.collapsed and healthy.max_grad_norm == 24.0
    flat = stability(log([math.log(16) * 1.3] * 10 + [math.log(16) * 1.04] * 10), candidates=16)
    assert flat.collapsed and not flat.diverged                 # falls, but to the loss of equal scores
    rising = stability(log([2.0] * 10 + [2.5] * 10), candidates=16)
    assert rising.diverged and not rising.collapsed
    nan = stability(log([5.0] * 10 + [None] + [1.0] * 9), candidates=16)
    assert nan.diverged and nan.non_finite_steps == 1 and nan.last_rank == 1.0
    with pytest.raises(InputError, match="no 'rank'"):
        stability([{"step": 1, "loss": 1.0}], candidates=16)
