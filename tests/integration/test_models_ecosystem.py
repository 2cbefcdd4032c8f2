"""A SPLADE model saved by lsr-eval loads in sentence-transformers' ``SparseEncoder`` and in Pyserini's SPLADE
encoders and gives lsr-eval's vectors (tiny BERT); models those libraries cannot reproduce get no
sentence-transformers files and say why."""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest
import torch
from tiny_models import tiny_model

from lsr_eval.models.sparsify import Sparsify
from lsr_eval.models.splade import SpladeModel

TEXTS = ["Aspirin reduces the risk of heart attack.", "cells",
         " ".join(["Vitamin D deficiency is associated with bone loss and fractures"] * 8)]  # truncated
MAX_Q, MAX_D = 12, 24
NO_SPARSIFY = Sparsify(None, 0.0, drop_special=False)


def _dense(encoder, texts) -> np.ndarray:
    """lsr-eval's B x V weights before sparsification (special tokens included)."""
    batch = encoder.tokenize(texts)
    with torch.no_grad():
        return encoder.forward(batch["input_ids"], batch["attention_mask"]).numpy()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    model = SpladeModel.from_pretrained(str(tiny_model("bert")), max_length_q=MAX_Q, max_length_d=MAX_D,
                                        sparsify_q=NO_SPARSIFY, sparsify_d=NO_SPARSIFY)
    folder = model.save_pretrained(tmp_path_factory.mktemp("st") / "model")
    return model, folder


def _require(name: str) -> None:
    """Skip when package ``name`` is not installed (found without importing it: pyserini starts a JVM at import),
    except under CI, where the test extra installs it and its absence fails."""
    if importlib.util.find_spec(name) is None:
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail(f"{name} is not installed (pip install -e '.[test]')")
        pytest.skip(f"{name} is not installed")


def test_sentence_transformers_sparse_encoder_gives_the_same_vectors(saved):
    _require("sentence_transformers")
    import sentence_transformers as st
    model, folder = saved
    config = json.loads((folder / "splade_config.json").read_text())
    assert config["sentence_transformers"]["written"] is True
    encoder = st.SparseEncoder(str(folder), device="cpu")
    assert encoder.max_seq_length >= MAX_D
    for ours, theirs in ((model.query, encoder.encode_query(TEXTS, convert_to_tensor=True)),
                         (model.document, encoder.encode_document(TEXTS, convert_to_tensor=True))):
        theirs = theirs.to_dense().numpy()
        expected = _dense(ours, TEXTS)
        assert theirs.shape == expected.shape == (len(TEXTS), ours.vocab_size)
        np.testing.assert_allclose(theirs, expected, rtol=1e-5, atol=1e-6)
        assert (theirs > 0).sum() == (expected > 0).sum()
    # the long text is cut at each side's max length, as lsr-eval cuts it (query and document differ)
    q, d = _dense(model.query, TEXTS[2:]), _dense(model.document, TEXTS[2:])
    assert not np.allclose(q, d)


def test_pyserini_splade_encoders_give_the_same_quantised_vectors(saved):
    """Pyserini's encoders quantise as round(w / 5 * 256) and keep the non-zero terms by vocabulary string."""
    _require("pyserini")
    from lsr_eval.anserini.pyserini_modules import pyserini_encode

    encode = pyserini_encode()

    model, folder = saved
    vocab = {i: t for t, i in model.document.tokenizer.vocab.items()}

    def quantised(w: np.ndarray) -> dict[str, int]:
        return {vocab[int(i)]: round(float(w[i]) / 5 * 256) for i in np.nonzero(w)[0]}

    query_encoder = encode.SpladeQueryEncoder(str(folder), device="cpu")
    for text, w in zip(TEXTS, _dense(model.query, TEXTS)):
        assert query_encoder.encode(text, max_length=MAX_Q) == quantised(w)
    doc_encoder = encode.SpladeDocumentEncoder(str(folder), device="cpu")
    theirs = doc_encoder.encode(TEXTS, max_length=MAX_D)
    assert theirs == [quantised(w) for w in _dense(model.document, TEXTS)]


def test_unrepresentable_models_get_no_sentence_transformers_files(saved, tmp_path):
    _, folder = saved
    # MiniLM-like checkpoint without head weights: identity head with the activation bypassed
    identity = SpladeModel.from_pretrained(str(tiny_model("bert", head=False)), max_length_q=MAX_Q,
                                           max_length_d=MAX_D)
    assert identity.document.head_init.identity["activation"] == "bypass"
    out = tmp_path / "identity"
    out.mkdir()
    (out / "modules.json").write_text((folder / "modules.json").read_text())  # stale files from an earlier save
    identity.save_pretrained(out)
    entry = json.loads((out / "splade_config.json").read_text())["sentence_transformers"]
    assert entry["written"] is False and "activation bypassed" in entry["blockers"][0]
    assert not (out / "modules.json").exists() and not (out / "sentence_bert_config.json").exists()
    # rescaled with the input compensated: a forward hook plain loading does not restore
    from lsr_eval.models.rescale import rescale_head

    compensated = SpladeModel.from_pretrained(str(tiny_model("bert")), max_length_q=MAX_Q, max_length_d=MAX_D)
    rescale_head(compensated.document.mlm, 4.0, tied_input="compensated")
    compensated.save_pretrained(tmp_path / "comp")
    entry = json.loads((tmp_path / "comp" / "splade_config.json").read_text())["sentence_transformers"]
    assert entry["written"] is False and "multiplied by 4" in entry["blockers"][0]
