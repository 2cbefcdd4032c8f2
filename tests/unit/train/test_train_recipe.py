"""Recipes: rescaling at initialisation, distinct and built query encoders, the saved model, middle training."""

from __future__ import annotations

import json

import pytest
import torch
from tiny_models import tiny_model
from train_helpers import model_copy, read_log, tiny_config

from lsr_eval.errors import ConfigError
from lsr_eval.models.diagnostics import SAMPLE_TEXTS, SUGGEST_KS, activation_stats, suggest_k
from lsr_eval.models.loading import load_mlm
from lsr_eval.models.splade import SpladeModel
from lsr_eval.train.config import MiddleTrainConfig, ModelConfig, SpladeTrainConfig, from_dict
from lsr_eval.train.recipe import build_model, head_norm
from lsr_eval.train.run import middle_train, train


def test_rescale_k_from_config_divides_the_head_before_training(tmp_path):
    path = model_copy(tmp_path)
    loaded, _, _ = load_mlm(path)
    model, reports = build_model(ModelConfig(path=str(path), rescale_k=4, max_length_d=24))
    assert head_norm(model.document.mlm) == pytest.approx(head_norm(loaded) / 4, rel=1e-6)
    rep = reports["document"]
    assert (rep.rescale_k, rep.rescale_rule) == (4.0, "config")
    assert rep.head_norm_before == pytest.approx(head_norm(loaded), rel=1e-6)
    assert model.shared and reports["query"] is rep


def test_suggested_k_comes_from_the_diagnostics(tmp_path):
    path = model_copy(tmp_path)
    mlm, tok, _ = load_mlm(path)
    with torch.no_grad():
        mlm.get_output_embeddings().weight.mul_(400.0)     # a head with a huge logit scale (tied: embeddings too)
    mlm.save_pretrained(tmp_path / "big")
    tok.save_pretrained(tmp_path / "big")
    rows, _ = activation_stats(mlm, tok, list(SAMPLE_TEXTS), SUGGEST_KS, max_length=24)
    expected = suggest_k(rows)
    assert expected > 1
    model, reports = build_model(ModelConfig(path=str(tmp_path / "big"), rescale_k="suggested", max_length_d=24))
    rep = reports["document"]
    assert (rep.rescale_k, rep.rescale_rule) == (float(expected), "suggested")
    assert rep.suggest_stats["at_k1"]["mean_max_logit"] == pytest.approx(rows[0].mean_max_logit, rel=1e-5)
    assert rep.suggest_stats["at_suggested"]["k"] == float(expected)
    assert rep.head_norm_after == pytest.approx(rep.head_norm_before / expected, rel=1e-6)


def test_built_query_encoder_shares_the_document_vocabulary(tmp_path):
    cfg = from_dict(ModelConfig, {"path": str(model_copy(tmp_path)), "max_length_q": 16, "max_length_d": 24,
                                  "query": {"build": {"layers": 2, "hidden": 16, "heads": 2, "intermediate": 32}}},
                    "test")
    torch.manual_seed(0)
    model, reports = build_model(cfg)
    assert not model.shared
    q, d = model.query, model.document
    assert q.tokenizer is d.tokenizer and q.vocab_size == d.vocab_size
    assert q.mlm.config.hidden_size == 16 and q.mlm.config.num_hidden_layers == 2
    assert reports["query"].source == "built"
    model.save_pretrained(tmp_path / "saved")
    again = SpladeModel.from_pretrained(tmp_path / "saved")
    texts = ["aspirin heart attack", "vitamin d deficiency"]
    torch.testing.assert_close(again.query.encode(texts).weights, model.query.encode(texts).weights)


def test_query_checkpoint_with_another_vocabulary_is_refused(tmp_path):
    cfg = from_dict(ModelConfig, {"path": str(model_copy(tmp_path)), "max_length_d": 24,
                                  "query": {"path": str(tiny_model("roberta"))}}, "test")
    with pytest.raises(ConfigError, match="must share one vocabulary"):
        build_model(cfg)


def test_trained_model_loads_for_evaluation_and_manifest_records_the_recipe(tmp_path):
    raw = tiny_config(tmp_path, "bt", steps=3,
                      model={"rescale_k": 2, "query": {"build": {"hidden": 16, "heads": 2, "intermediate": 32}}})
    result = train(from_dict(SpladeTrainConfig, raw, "test"))
    model = SpladeModel.from_pretrained(result.final_model)
    assert not model.shared and model.document.describe()["head_rescale_k"] == 2.0
    assert model.query.encode(["aspirin"]).weights.shape[1] == model.document.vocab_size
    manifest = json.loads((tmp_path / "results" / "bt" / "manifest.json").read_text())
    assert manifest["stage"] == "train" and manifest["status"] == "done"
    assert manifest["experiment"]["rescale_k"] == 2.0
    assert manifest["experiment"]["backbone"] == raw["model"]["path"]
    assert manifest["head_norm_before"] == pytest.approx(manifest["init"]["document"]["head_norm_after"] * 2)
    assert manifest["data"]["examples_per_epoch"] == 12 and manifest["timings"]["steps_this_run"] == 3
    assert "torch" in manifest["versions"]
    log = read_log(result.log_file)
    assert [r["step"] for r in log] == [1, 2, 3]
    assert {"loss", "rank", "l1_q", "flops_d", "lambda_q", "lambda_d", "active_dims_q", "active_dims_d", "flops",
            "head_norm", "head_norm_q", "lr", "grad_norm", "step_time"} <= set(log[0])
    assert [r["lambda_d"] for r in log] == pytest.approx([1e-2 / 9, 4e-2 / 9, 1e-2])
    assert [r["lr"] for r in log] == pytest.approx([5e-4, 1e-3, 1e-3])


def test_margin_mse_distillation_trains(tmp_path):
    teacher = tmp_path / "teacher.txt"
    teacher.write_text("".join(f"q{i} d{j} {5.0 if i == j else float(j % 3)}\n" for i in range(12) for j in range(12)))
    raw = tiny_config(tmp_path, "mse", steps=2, data={"teacher_scores": str(teacher), "negatives": None},
                      loss={"name": "margin_mse"})
    result = train(from_dict(SpladeTrainConfig, raw, "test"))
    log = read_log(result.log_file)
    assert all(r["rank"] > 0 for r in log)
    manifest = json.loads((tmp_path / "results" / "mse" / "manifest.json").read_text())
    assert manifest["data"]["teacher"]["pairs"] == 144 and manifest["data"]["teacher"]["unknown_queries"] == 0


def test_middle_training_mlm_plus_flops(tmp_path):
    raw = tiny_config(tmp_path, "mid")
    cfg = from_dict(MiddleTrainConfig, {
        "model": {"path": raw["model"]["path"], "max_length": 24},
        "data": {"dataset": raw["data"]["dataset"]},
        "mlm": {"mask_prob": 0.3, "lambda_d": 1e-2, "warmup_d": 2},
        "optim": {"lr": 1e-3},
        "train": {"steps": 3, "batch_size": 4, "bf16": False, "checkpoint_every": 0, "progress": False},
        "output": {"dir": str(tmp_path / "results" / "mid"), "model_dir": str(tmp_path / "work" / "mid")}},
        "test")
    result = middle_train(cfg)
    log = read_log(result.log_file)
    assert [r["lambda_d"] for r in log] == pytest.approx([2.5e-3, 1e-2, 1e-2])
    for r in log:
        assert r["loss"] == pytest.approx(r["mlm"] + r["lambda_d"] * r["flops_d"], rel=1e-5)
        assert r["masked_tokens"] > 0
    mlm, _, report = load_mlm(result.final_model)
    assert report.applied == "loaded"                       # a masked LM with its (trained) head


def test_masking_follows_bert_rule():
    from lsr_eval.train.middle import mask_tokens

    ids = torch.arange(10, 10010).reshape(10, 1000)
    att = torch.ones_like(ids)
    att[:, 900:] = 0
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = True
    masked, labels = mask_tokens(ids, att, special, mask_id=3, vocab_size=50, prob=0.2,
                                 generator=torch.Generator().manual_seed(0))
    chosen = labels != -100
    assert not chosen[:, 0].any() and not chosen[:, 900:].any()
    assert chosen.float().mean().item() == pytest.approx(0.2 * 899 / 1000, abs=0.01)
    assert torch.equal(labels[chosen], ids[chosen])
    frac_mask = (masked[chosen] == 3).float().mean().item()
    frac_same = (masked[chosen] == ids[chosen]).float().mean().item()
    assert frac_mask == pytest.approx(0.8, abs=0.03) and frac_same == pytest.approx(0.1, abs=0.03)
    assert torch.equal(masked[~chosen], ids[~chosen])
