"""Inference-free query encoder (lsr_eval.models.static_query): the corpus IDF, learned tables in the OpenSearch and
sentence-transformers layouts, the query vectors, and its place in SpladeModel, benchmark YAML and training."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from conftest import write_beir
from tiny_models import tiny_bert

from lsr_eval.data.datasets import load_dataset
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.models.sparsify import Sparsify
from lsr_eval.models.static_query import (
    StaticQueryEncoder,
    document_frequencies,
    is_static_model,
    rsj_idf,
    static_location,
)

#: words that are one token of the tiny tokenizer whether it was trained on SciFact or on the built-in text
DOCS = [{"_id": "a", "title": "Cancer", "text": "cancer risk in the cell"},
        {"_id": "b", "title": "", "text": "gene risk of disease"},
        {"_id": "c", "title": "", "text": "cancer and gene"},
        {"_id": "d", "title": "", "text": "cells of the disease"}]
QUERIES = [{"_id": "q1", "text": "cancer risk"}]
QRELS = [("q1", "a", 1)]


@pytest.fixture
def corpus(tmp_path):
    return load_dataset(str(write_beir(tmp_path / "beir", DOCS, QUERIES, QRELS)))


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_bert())


def _id(tokenizer, word: str) -> int:
    ids = tokenizer(word, add_special_tokens=False)["input_ids"]
    assert len(ids) == 1, f"{word!r} is not one token of the tiny vocabulary: {ids}"
    return ids[0]


def test_rsj_idf_by_hand():
    # N = 4: df 0 -> ln(1 + 4.5/0.5) = ln 10; df 1 -> ln(1 + 3.5/1.5) = ln(10/3); df 4 -> ln(1 + 0.5/4.5) = ln(10/9)
    got = rsj_idf(np.array([0, 1, 4]), 4)
    assert np.allclose(got, [math.log(10), math.log(10 / 3), math.log(10 / 9)], rtol=1e-6)


def test_document_frequencies_count_each_document_once(tokenizer):
    cancer, risk = _id(tokenizer, "cancer"), _id(tokenizer, "risk")
    df, n = document_frequencies(["cancer cancer risk", "cancer", "gene"], tokenizer, len(tokenizer), chunk=2)
    assert n == 3 and df[cancer] == 2 and df[risk] == 1
    assert df[tokenizer.cls_token_id] == 0          # no special tokens counted


def test_idf_weights_follow_the_formula_and_are_cached(corpus, tokenizer, tmp_path, monkeypatch):
    enc = StaticQueryEncoder.from_idf(corpus, tokenizer, work_dir=tmp_path / "work")
    cancer, risk, cells = _id(tokenizer, "cancer"), _id(tokenizer, "risk"), _id(tokenizer, "cells")
    # 4 documents: "cancer" in a (title and text) and c -> df 2; "risk" in a, b -> 2; "cells" in d -> 1
    assert enc.weight[cancer] == pytest.approx(math.log(1 + 2.5 / 2.5))
    assert enc.weight[cells] == pytest.approx(math.log(1 + 3.5 / 1.5))
    assert enc.weight[risk] == enc.weight[cancer]
    assert float(enc.weight[tokenizer.cls_token_id]) == 0.0         # special tokens weigh 0
    assert enc.describe()["source"]["documents"] == 4
    slots = list((tmp_path / "work" / "idf").iterdir())
    assert len(slots) == 1 and (slots[0] / "df.npy").is_file()

    def fail(*a, **k):
        raise AssertionError("the IDF was counted again")

    monkeypatch.setattr("lsr_eval.models.static_query.document_frequencies", fail)
    again = StaticQueryEncoder.from_idf(corpus, tokenizer, work_dir=tmp_path / "work")
    assert torch.equal(again.weight, enc.weight)


def test_query_vector_is_one_weight_per_distinct_id(tokenizer):
    weight = np.arange(len(tokenizer), dtype=np.float32) / 10
    enc = StaticQueryEncoder(weight, tokenizer)
    cancer, risk = _id(tokenizer, "cancer"), _id(tokenizer, "risk")
    out = enc.encode(["cancer risk cancer"], sparse=True)
    row = out.weights.tocsr()
    assert row.indices.tolist() == sorted([cancer, risk])
    assert np.allclose(row.data, [weight[i] for i in sorted([cancer, risk])])     # binary tf: cancer counted once
    assert out.n_tokens.tolist() == [5]                                          # [CLS] cancer risk cancer [SEP]
    dense = enc.encode(["cancer risk cancer", "risk"]).weights
    ids = enc.tokenize(["cancer risk cancer", "risk"])
    assert torch.equal(enc(ids["input_ids"], ids["attention_mask"]), dense)      # training forward = encode
    top = enc.encode(["cancer risk"], sparse=True, sparsify=Sparsify(top_k=1)).weights
    assert top.indices.tolist() == [max(cancer, risk)]                            # the larger weight
    cut = enc.encode(["cancer risk"], sparse=True, sparsify=Sparsify(threshold=float(weight[min(cancer, risk)])))
    assert cut.weights.indices.tolist() == [max(cancer, risk)]


def test_opensearch_idf_json_folder(tmp_path, tokenizer):
    folder = tmp_path / "doc-only"
    tokenizer.save_pretrained(folder)
    (folder / "idf.json").write_text(json.dumps({"cancer": 2.5, "risk": 0.75, "[CLS]": 9.0}))
    assert is_static_model(folder)
    enc = StaticQueryEncoder.from_pretrained(folder)
    row = enc.encode(["cancer risk gene"], sparse=True).weights
    got = {enc.terms[i]: float(v) for i, v in zip(row.indices, row.data)}
    assert got == {"cancer": 2.5, "risk": 0.75}             # gene: absent from the table; [CLS]: special
    assert enc.describe()["source"]["kind"] == "opensearch-idf-json"
    (folder / "idf.json").write_text(json.dumps({"notatoken123": 1.0}))
    with pytest.raises(InputError, match="not in the tokenizer's vocabulary"):
        StaticQueryEncoder.from_pretrained(folder)


def _st_static(tokenizer, weight):
    pytest.importorskip("sentence_transformers")
    from sentence_transformers.sparse_encoder.modules import SparseStaticEmbedding

    return SparseStaticEmbedding(tokenizer, torch.tensor(weight), frozen=True)


def test_sentence_transformers_module_folder_gives_its_vectors(tmp_path, tokenizer):
    weight = np.linspace(0.1, 3.0, len(tokenizer)).astype(np.float32)
    module = _st_static(tokenizer, weight)
    module.save(str(tmp_path / "st"))
    enc = StaticQueryEncoder.from_pretrained(tmp_path / "st")
    assert enc.describe()["source"]["kind"] == "sentence-transformers-static"
    texts = ["cancer risk in the cell", "gene of disease"]
    features = module.preprocess(texts)
    ref = module(features)["sentence_embedding"].detach()
    ref[:, sorted(set(tokenizer.all_special_ids))] = 0          # lsr-eval drops special tokens
    assert torch.allclose(enc.encode(texts).weights, ref)


def test_sentence_transformers_router_model(tmp_path, tokenizer):
    weight = np.linspace(0.1, 3.0, len(tokenizer)).astype(np.float32)
    _st_static(tokenizer, weight).save(str(tmp_path / "m" / "query_0_SparseStaticEmbedding"))
    (tmp_path / "m" / "modules.json").write_text(json.dumps(
        [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.router.Router"}]))
    (tmp_path / "m" / "router_config.json").write_text(json.dumps({
        "types": {"query_0_SparseStaticEmbedding":
                  "sentence_transformers.sparse_encoder.modules.sparse_static_embedding.SparseStaticEmbedding",
                  "document_0_MLMTransformer": "sentence_transformers.sparse_encoder.modules.MLMTransformer"},
        "structure": {"query": ["query_0_SparseStaticEmbedding"], "document": ["document_0_MLMTransformer"]}}))
    enc = StaticQueryEncoder.from_pretrained(tmp_path / "m")
    assert np.allclose(enc.weight.numpy()[5:], weight[5:])
    (tmp_path / "m" / "router_config.json").write_text(json.dumps({"types": {}, "structure": {"query": []}}))
    assert not is_static_model(tmp_path / "m")
    with pytest.raises(InputError, match="without a SparseStaticEmbedding query module"):
        StaticQueryEncoder.from_pretrained(tmp_path / "m")


def test_save_and_load_back(tmp_path, tokenizer):
    weight = np.zeros(len(tokenizer), dtype=np.float32)
    weight[_id(tokenizer, "cancer")] = 1.5
    enc = StaticQueryEncoder(weight, tokenizer, 32, sparsify=Sparsify(top_k=3), source={"kind": "idf"})
    enc.save_pretrained(tmp_path / "saved")
    back = StaticQueryEncoder.from_pretrained(tmp_path / "saved")
    assert torch.equal(back.weight, enc.weight) and back.max_length == 32 and back.sparsify == Sparsify(top_k=3)
    assert back.describe()["source"]["kind"] == "idf"


def test_bad_weights_and_missing_folder_are_one_line(tmp_path, tokenizer):
    with pytest.raises(InputError, match="non-negative"):
        StaticQueryEncoder(-np.ones(len(tokenizer)), tokenizer)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not a static query model"):
        StaticQueryEncoder.from_pretrained(tmp_path / "empty")
    assert static_location("static:org/name") == "org/name" and is_static_model("static:org/name")


def test_splade_model_with_idf_queries_saves_and_reloads(corpus, tmp_path):
    from lsr_eval.models.splade import SpladeModel

    bert = tiny_bert()
    with pytest.raises(ConfigError, match="idf_corpus"):
        SpladeModel.from_pretrained(bert, "idf", max_length_d=64)
    model = SpladeModel.from_pretrained(bert, "idf", idf_corpus=corpus, work_dir=tmp_path / "work", max_length_d=64)
    assert model.inference_free and not model.shared
    assert model.config_dict()["encoders"]["query"]["kind"] == "static"
    model.save_pretrained(tmp_path / "saved")
    back = SpladeModel.from_pretrained(tmp_path / "saved")
    assert back.inference_free
    texts = ["cancer risk", "cells of the disease"]
    assert torch.equal(back.query.encode(texts).weights, model.query.encode(texts).weights)
    assert torch.equal(back.document.encode(texts).weights, model.document.encode(texts).weights)


def test_splade_model_refuses_another_vocabulary(tmp_path, tokenizer):
    from tiny_models import tiny_model

    from lsr_eval.models.splade import SpladeModel

    folder = tmp_path / "q"
    StaticQueryEncoder(np.ones(len(tokenizer)), tokenizer).save_pretrained(folder)
    with pytest.raises(ConfigError, match="vocabulary"):
        SpladeModel.from_pretrained(tiny_model("roberta"), str(folder), max_length_d=64)


def test_benchmark_yaml_accepts_idf_and_static_queries():
    from lsr_eval.benchmark.config import check_model

    check_model("idf", "systems[0]: query_model", on_disk=True, query=True)
    check_model("static:org/name", "systems[0]: query_model", on_disk=True, query=True)
    with pytest.raises(ConfigError, match="not a folder here"):
        check_model("static:no/such/thing", "systems[0]: query_model", on_disk=True, query=True)


def test_training_keeps_the_idf_query_side_fixed(corpus, tmp_path, monkeypatch):
    from lsr_eval.train.config import ModelConfig, QueryEncoderConfig
    from lsr_eval.train.recipe import build_model

    monkeypatch.setenv("LSR_EVAL_WORK", str(tmp_path / "work"))
    cfg = ModelConfig(path=str(tiny_bert()), max_length_q=16, max_length_d=32, query=QueryEncoderConfig(path="idf"))
    with pytest.raises(ConfigError, match="training corpus"):
        build_model(cfg)
    model, reports = build_model(cfg, idf_corpus=corpus)
    assert model.inference_free and reports["query"].extra["trainable"] is False
    assert not list(model.query.parameters())           # nothing of the query side reaches the optimizer
    q = model.query.tokenize(["cancer risk"])
    d = model.document.tokenize(["cancer risk in the cell"])
    score = (model.query(q["input_ids"], q["attention_mask"])
             * model.document(d["input_ids"], d["attention_mask"])).sum()
    score.backward()
    assert model.document.mlm.get_output_embeddings().weight.grad is not None
    assert model.query.weight.grad is None


def test_benchmark_loads_one_idf_model_per_corpus(monkeypatch):
    import lsr_eval.benchmark.run as run
    import lsr_eval.pipeline.splade as splade

    class Corpus:
        def __init__(self, path: str) -> None:
            self.path = path

        def corpus_key(self) -> dict:
            return {"path": self.path}

    loads = []
    monkeypatch.setattr(run, "load_model", lambda s, dataset=None, work=None: loads.append(dataset) or object())
    models: dict = {}
    s = splade.SpladeSettings.from_flat(model="m", query_model="idf")
    a, b = Corpus("scifact"), Corpus("nfcorpus")
    first = run._model_for(s, models, a)
    assert run._model_for(s, models, Corpus("scifact")) is first      # the same corpus: loaded once
    assert run._model_for(s, models, b) is not first                  # another corpus: another IDF
    assert loads == [a, b]


def test_the_latency_query_path_takes_it(tokenizer):
    from lsr_eval.efficiency.latency import QueryWeights

    weight = np.zeros(len(tokenizer), dtype=np.float32)
    weight[_id(tokenizer, "cancer")], weight[_id(tokenizer, "risk")] = 1.234, 0.5
    to_map = QueryWeights(StaticQueryEncoder(weight, tokenizer), scale=100)
    assert to_map("cancer risk of") == {"cancer": 123, "risk": 50}       # rint(w * 100); "of" weighs 0


def test_binary_queries_are_naver_spladedocs_bag_of_tokens(tmp_path):
    """naver/splade's SpladeDoc query: 1 for each distinct token of the query, pad/CLS/SEP 0 (``generate_bow``)."""
    from lsr_eval.models.splade import SpladeModel
    from lsr_eval.train.config import ModelConfig, QueryEncoderConfig
    from lsr_eval.train.recipe import build_model

    model = SpladeModel.from_pretrained(tiny_bert(), "binary", max_length_d=64)
    assert model.inference_free and model.query.describe()["source"]["kind"] == "binary"
    tok = model.query.tokenizer
    batch = model.query.tokenize(["cancer cancer risk", "risk"])
    w = model.query(batch["input_ids"], batch["attention_mask"])
    for row, ids in zip(w, batch["input_ids"].tolist()):
        words = {i for i in ids if i not in tok.all_special_ids}
        assert {int(i) for i in torch.nonzero(row).flatten()} == words
        assert set(row[list(words)].tolist()) == {1.0}            # present once or twice: 1
    model.save_pretrained(tmp_path / "saved")
    back = SpladeModel.from_pretrained(tmp_path / "saved")
    assert torch.equal(back.query.encode(["cancer risk"]).weights, model.query.encode(["cancer risk"]).weights)
    # trained as the VI-doc models are: the document side learns, the bag of tokens stays
    trained, reports = build_model(ModelConfig(path=str(tiny_bert()), max_length_q=16, max_length_d=32,
                                               query=QueryEncoderConfig(path="binary")))
    assert reports["query"].extra["trainable"] is False and not list(trained.query.parameters())
    from lsr_eval.benchmark.config import check_model

    check_model("binary", "systems[0]: query_model", on_disk=True, query=True)
