"""ONNX Runtime query encoder (lsr_eval.models.onnx_query): same vectors as the torch path, cache, errors."""

from __future__ import annotations

import importlib.util
import json
import os
import sys

import numpy as np
import pytest
import torch
from conftest import shared_path
from tiny_models import BUILTIN_TEXT, tiny_model

from lsr_eval.efficiency.latency import QueryWeights, torch_threads
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.models.encoder import SpladeEncoder
from lsr_eval.models.onnx_query import (
    MODES,
    ORT_PIP,
    MissingDependency,
    OnnxQueryEncoder,
    query_encoder,
    weights_fingerprint,
)
from lsr_eval.models.sparsify import Sparsify

#: Run on this CPU and on one with native bf16 simulated (tests/conftest.py): the default must not depend on it.
pytestmark = pytest.mark.precision_sensitive

#: Share of SciFact test queries whose integer vectors must equal the torch path's (the required figure).
MIN_IDENTICAL = 0.99
TEXTS = BUILTIN_TEXT + ["", "aspirin", "the cell membrane controls the movement of substances in and out of cells " * 6]


def _need(module: str) -> None:
    """Skip where ``module`` is not installed, except in CI, where it must be."""
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is not installed (CI needs it: {ORT_PIP}, pip install onnx==1.23.2)")
        pytest.skip(f"{module} not installed")


@pytest.fixture
def ort_and_onnx():
    _need("onnxruntime")
    _need("onnx")


def _tiny_encoder(max_length: int = 32, sparsify: Sparsify = Sparsify()) -> SpladeEncoder:
    return SpladeEncoder.from_pretrained(tiny_model("bert"), max_length, sparsify=sparsify)


def _int_diff(a: dict[str, int], b: dict[str, int]) -> dict[str, tuple]:
    return {t: (a.get(t), b.get(t)) for t in sorted(set(a) | set(b)) if a.get(t) != b.get(t)}


def _off_boundary(enc: SpladeEncoder, text: str, diff: dict[str, tuple], scale: float = 100.0) -> dict[str, float]:
    """Terms of ``diff`` whose torch weight ``w`` is not within ``1e-5 * scale`` of a rounding boundary of
    ``rint(w * scale)``: with weights equal within 1e-5 only boundary terms may round differently."""
    row = enc.encode([text], sparse=True).weights.tocsr()
    w = {enc.terms[i]: float(v) for i, v in zip(row.indices, row.data)}
    out = {}
    for term, (a, b) in diff.items():
        x = w.get(term, 0.0) * scale
        if abs((a or 0) - (b or 0)) > 1 or abs(abs(x - np.floor(x)) - 0.5) >= 1e-5 * scale:
            out[term] = x
    return out


# ---- (a) tiny random BERT: float weights within 1e-5, identical integer vectors --------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_tiny_bert_weights_match_torch(ort_and_onnx, tmp_path, mode):
    enc = _tiny_encoder()
    onnx_enc = OnnxQueryEncoder(enc, tmp_path, mode=mode)
    ref = enc.encode(TEXTS, batch_size=4)
    got = onnx_enc.encode(TEXTS)
    assert got.weights.shape == ref.weights.shape == (len(TEXTS), enc.vocab_size)
    assert (ref.weights > 0).sum(1).min() > 0          # non-trivial vectors: the comparison means something
    torch.testing.assert_close(got.weights, ref.weights, rtol=0, atol=1e-5)
    assert got.n_tokens.tolist() == ref.n_tokens.tolist()
    assert got.truncated.tolist() == ref.truncated.tolist() and ref.truncated[-1] and not ref.truncated[0]
    sparse = onnx_enc.encode(TEXTS, sparse=True).weights
    np.testing.assert_array_equal(sparse.toarray(), got.weights.numpy())
    ours, theirs = QueryWeights(onnx_enc), QueryWeights(enc)
    diffs = {t: _int_diff(theirs(t), ours(t)) for t in TEXTS}
    assert sum(not d for d in diffs.values()) >= len(TEXTS) - 2, diffs
    bad = {t: _off_boundary(enc, t, d) for t, d in diffs.items() if d}
    assert not any(bad.values()), f"integer weights differ away from a rounding boundary: {bad}"


@pytest.mark.parametrize("family,head", [("distilbert", True), ("albert", True), ("roberta", True),
                                         ("modernbert", True), ("bert", False)])
def test_other_families_match_torch(ort_and_onnx, tmp_path, family, head):
    """Other masked LMs, and a headless backbone given lsr-eval's identity head (bypassed activation: a change of
    the forward pass, not of the weights, that the export must carry)."""
    enc = SpladeEncoder.from_pretrained(tiny_model(family, head=head), 32)
    if not head:
        assert enc.head_init is not None and enc.head_init.applied == "identity"
    ref = enc.encode(TEXTS, batch_size=4).weights
    got = OnnxQueryEncoder(enc, tmp_path).encode(TEXTS).weights
    assert (ref > 0).sum(1).min() > 0
    torch.testing.assert_close(got, ref, rtol=0, atol=1e-5)


@pytest.mark.parametrize("rule", [Sparsify(top_k=5), Sparsify(threshold=0.3), Sparsify(drop_special=False),
                                  Sparsify(top_k=3, threshold=0.2, drop_special=False)])
def test_tiny_bert_sparsify_rules_match_torch(ort_and_onnx, tmp_path, rule):
    enc = _tiny_encoder(sparsify=rule)
    ref = enc.encode(TEXTS).weights
    got = OnnxQueryEncoder(enc, tmp_path).encode(TEXTS).weights
    assert torch.equal(got > 0, ref > 0), "different terms kept"
    torch.testing.assert_close(got, ref, rtol=0, atol=1e-5)
    if rule.top_k is not None:
        assert int((got > 0).sum(1).max()) == rule.top_k
    if not rule.drop_special and rule.top_k is None:     # special tokens kept: some have weight
        assert bool((got[:, enc.special_ids] > 0).any())


@pytest.mark.parametrize("mode", MODES)
def test_query_row_and_its_weight_map_are_the_matrix_row(ort_and_onnx, tmp_path, mode):
    """The one-query path (reused buffers, no matrix) gives encode()'s row and QueryWeights the same map as
    quantising that row, whatever the order of long and short texts; its parts are reported."""
    from lsr_eval.export.quantize import VocabCheck, quantize_rows

    enc = OnnxQueryEncoder(_tiny_encoder(sparsify=Sparsify(top_k=6)), tmp_path, mode=mode)
    order = [TEXTS[-1], TEXTS[0], "aspirin", TEXTS[-1], TEXTS[1]]       # longest first, then shorter, then longest
    rows = enc.encode(order, sparse=True).weights.tocsr()
    qw = QueryWeights(enc, 100.0)
    vocab = VocabCheck(enc.terms)
    for i, text in enumerate(order):
        stats: dict[str, float] = {}
        idx, val = enc.query_row(text, stats)
        row = rows[i]
        np.testing.assert_array_equal(idx, row.indices)
        np.testing.assert_array_equal(val, row.data)
        assert len(idx) == 6
        parts = {"tokenize", "session", "select", "sparsify", "candidates"}
        assert parts <= set(stats) and all(stats[p] >= 0 for p in parts)
        q = quantize_rows(row, [f"q{i}"], vocab, 100.0, what="query")
        want = dict(zip(vocab.tokens[q.indices].tolist(), q.values.tolist()))
        wstats: dict[str, float] = {}
        assert qw(text, f"q{i}", wstats) == qw(text) == want
        assert "weight_map" in wstats and "encode" not in wstats
    with pytest.raises(InputError):
        enc.query_row(None)


def test_torch_weight_map_reports_encode_and_weight_map():
    enc = _tiny_encoder()
    stats: dict[str, float] = {}
    assert QueryWeights(enc, 100.0)("aspirin", "q", stats) == QueryWeights(enc, 100.0)("aspirin")
    assert set(stats) == {"encode", "weight_map"}


def test_exported_transformer_has_constant_reshapes(ort_and_onnx, tmp_path):
    """The tracer's shape arithmetic is replaced by constant Reshape targets (and kept out of the file), and the
    vectors stay within the torch path's tolerance (bit-equality with the traced graph is checked at export)."""
    import onnx

    enc = _tiny_encoder()
    onnx_enc = OnnxQueryEncoder(enc, tmp_path)
    graph = onnx.load(str(onnx_enc.folder / "filter.onnx")).graph
    inits = {t.name for t in graph.initializer}
    reshapes = [n for n in graph.node if n.op_type == "Reshape"]
    assert reshapes and all(n.input[1] in inits for n in reshapes)
    assert not [n for n in graph.node if n.op_type == "Expand"]
    torch.testing.assert_close(onnx_enc.encode(TEXTS).weights, enc.encode(TEXTS).weights, rtol=0, atol=1e-5)


def test_cache_is_keyed_by_weights(ort_and_onnx, tmp_path):
    enc = _tiny_encoder()
    first = OnnxQueryEncoder(enc, tmp_path)
    again = OnnxQueryEncoder(enc, tmp_path)
    assert first.exported and not again.exported and again.folder == first.folder
    meta = json.loads((first.folder / "meta.json").read_text())
    assert meta["key"]["weights_sha256"] == weights_fingerprint(enc.mlm)
    before = first.encode(["aspirin"]).weights
    with torch.no_grad():
        enc.mlm.get_output_embeddings().bias.add_(0.5)     # a changed weight: a new export, a new vector
    changed = OnnxQueryEncoder(enc, tmp_path)
    assert changed.exported and changed.folder != first.folder
    torch.testing.assert_close(changed.encode(["aspirin"]).weights, enc.encode(["aspirin"]).weights,
                               rtol=0, atol=1e-5)
    assert not torch.equal(changed.encode(["aspirin"]).weights, before)
    (first.folder / "meta.json").write_text("{}")          # an incomplete or foreign export is redone
    with torch.no_grad():
        enc.mlm.get_output_embeddings().bias.sub_(0.5)
    assert OnnxQueryEncoder(enc, tmp_path).exported


def test_options_are_validated(ort_and_onnx, tmp_path):
    enc = _tiny_encoder()
    assert query_encoder(enc, "torch") is enc
    with pytest.raises(ConfigError, match="^query_runtime must be one of torch, onnx, got 'jax'$"):
        query_encoder(enc, "jax")
    with pytest.raises(ConfigError, match="^mode must be one of pruned, dense, got 'fast'$"):
        OnnxQueryEncoder(enc, tmp_path, mode="fast")
    onnx_enc = query_encoder(enc, "onnx", work_dir=tmp_path)
    assert isinstance(onnx_enc, OnnxQueryEncoder) and onnx_enc.terms == enc.terms
    with pytest.raises(ConfigError, match="float32 only"):
        onnx_enc.encode(["aspirin"], bf16=True)
    with pytest.raises(ConfigError, match="float32 only"):
        QueryWeights(onnx_enc, bf16=True)("aspirin")


def test_auto_is_resolved_before_the_onnx_path_decides(ort_and_onnx, tmp_path, monkeypatch):
    """``auto`` is resolved for the CPU first: fp32 there is recorded, bf16 there (native bf16 simulated) refused."""
    from conftest import simulate_bf16_cpu

    enc = _tiny_encoder()
    assert query_encoder(enc, "onnx", work_dir=tmp_path).describe()["precision"] == "fp32"
    enc.precision = "auto"
    monkeypatch.setattr("lsr_eval.hardware.cpu_flags", lambda: frozenset({"avx2"}))
    onnx_enc = query_encoder(enc, "onnx", work_dir=tmp_path)
    assert onnx_enc.resolved_precision().to_dict()["requested"] == "auto"
    assert QueryWeights(onnx_enc).precision.name == "fp32"
    simulate_bf16_cpu(monkeypatch)
    with pytest.raises(ConfigError, match="precision='auto' resolves to bf16 here \\(CPU has amx_bf16, avx512_bf16\\)"):
        query_encoder(enc, "onnx", work_dir=tmp_path)
    with pytest.raises(ConfigError, match="float32 only"):
        onnx_enc.encode(["aspirin"], precision="auto")


# ---- (b) splade-tiny on the 300 SciFact test queries: integer vectors as the reference path --------------------------

@pytest.fixture(scope="module")
def splade_tiny():
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.splade import MAX_LENGTH_QUERY

    return SpladeEncoder.from_pretrained(resolve_model("splade-tiny"), MAX_LENGTH_QUERY)


@pytest.fixture(scope="module")
def scifact_reference(splade_tiny, tmp_path_factory):
    """The 300 SciFact test queries, splade-tiny's integer vectors of them on the torch path (fp32 on every CPU kind,
    computed once), and one folder for the ONNX exports (each mode exported once, reused by both CPU kinds)."""
    from lsr_eval.data.datasets import load_dataset

    queries = load_dataset(str(shared_path("beir", "scifact")), "test").queries()
    ref = QueryWeights(splade_tiny)
    with torch_threads(1):
        vectors = {q.id: ref(q.text, q.id) for q in queries}
    return queries, vectors, tmp_path_factory.mktemp("onnx")


@pytest.mark.parametrize("mode", MODES)
def test_splade_tiny_scifact_integer_vectors(ort_and_onnx, scifact_reference, splade_tiny, mode):
    queries, reference, folder = scifact_reference
    assert len(queries) == 300
    onnx_enc = OnnxQueryEncoder(splade_tiny, folder, mode=mode)
    assert QueryWeights(splade_tiny).precision.name == "fp32"  # the reference holds on this CPU kind too
    ours = QueryWeights(onnx_enc)
    differ, stats = {}, {}
    with torch_threads(1):          # one query at a time: extra torch threads only wait on each other
        for q in queries:
            a, b = reference[q.id], ours(q.text, q.id)
            assert a, f"query {q.id}: empty reference vector"
            if a != b:
                differ[q.id] = _int_diff(a, b)
            onnx_enc.pooled(onnx_enc.tokenize(q.text).ids, stats)
    same = len(queries) - len(differ)
    assert same >= MIN_IDENTICAL * len(queries), (
        f"{same}/{len(queries)} identical integer query vectors (need {MIN_IDENTICAL:.0%}); differing "
        f"(term: (torch, onnx)): {differ}")
    texts = {q.id: q.text for q in queries}
    bad = {qid: _off_boundary(splade_tiny, texts[qid], d) for qid, d in differ.items()}
    assert not any(bad.values()), f"integer weights differ away from a rounding boundary: {bad}"
    if mode == "pruned":                # the filter must prune: a few percent of the vocabulary per query
        assert stats["candidates"] / len(queries) < 0.05 * onnx_enc.vocab_size, stats


# ---- (c) missing packages: the message names the pip command ---------------------------------------------------------

def test_missing_onnxruntime_names_the_pip_command(monkeypatch, tmp_path):
    enc = _tiny_encoder()
    monkeypatch.setitem(sys.modules, "onnxruntime", None)      # import onnxruntime -> ImportError
    with pytest.raises(MissingDependency, match=r"pip install 'lsr-eval\[onnx\]'"):
        OnnxQueryEncoder(enc, tmp_path)
    with pytest.raises(ImportError, match=r"pip install 'lsr-eval\[onnx\]'"):
        query_encoder(enc, "onnx", work_dir=tmp_path)
    assert not (tmp_path / "onnx_query").exists()              # refused before any export


def test_missing_onnx_names_the_pip_command(monkeypatch, tmp_path):
    _need("onnxruntime")
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(MissingDependency, match=r"pip install 'lsr-eval\[onnx\]'"):
        OnnxQueryEncoder(_tiny_encoder(), tmp_path)


def test_part_sessions_compute_what_the_filter_does(ort_and_onnx, tmp_path):
    from lsr_eval.models.onnx_query import part_sessions

    onnx_enc = OnnxQueryEncoder(_tiny_encoder(), tmp_path)
    parts = part_sessions(onnx_enc)
    ids = onnx_enc.tokenize(TEXTS[0]).ids
    x = np.asarray(ids, dtype=np.int64).reshape(1, -1)
    h_ref, acc_ref, *_ = onnx_enc._filter.run(None, {"input_ids": x})
    h = parts["transformer"].run(None, {"input_ids": x})[0]
    np.testing.assert_allclose(h, h_ref, rtol=0, atol=1e-5)
    hq = np.arange(h.size, dtype=np.int64).reshape(h.shape).astype(np.uint8) % 200
    acc = parts["int8_product"].run(None, {"hq": hq.astype(np.uint8), "zh": np.array(7, np.uint8)})[0]
    expected = (hq.astype(np.int64) - 7) @ onnx_enc._dec.q.T.astype(np.int64)    # exact integer product
    np.testing.assert_array_equal(acc, expected)
    assert acc.shape == acc_ref.shape
    assert set(part_sessions(onnx_enc)) == {"transformer", "int8_product"}   # reused from the folder
