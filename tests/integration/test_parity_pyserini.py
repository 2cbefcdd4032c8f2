"""studies.pyserini_parity.measure (studies/pyserini_parity/run.py): Pyserini's quantisation reproduced on
lsr-eval's vectors."""

from __future__ import annotations

import numpy as np
import pytest

from studies.pyserini_parity import measure as parity


def test_quantize_by_hand():
    # w / 5 * 256: 0.5 -> 25.6 -> 26; 0.0 -> 0; 5/512 -> exactly 0.5 -> 0 (half to even); 15/512 -> 1.5 -> 2;
    # 25/512 -> 2.5 -> 2; 1.0 -> 51.2 -> 51
    w = np.array([0.5, 0.0, 5 / 512, 15 / 512, 25 / 512, 1.0], dtype=np.float32)
    assert parity.pyserini_quantize(w).tolist() == [26, 0, 0, 2, 2, 51]


def test_quantize_equals_pyserini_own():
    """Pyserini's own quantisation (SpladeEncoder._get_encoded_query_token_wight_dicts) on float32 weights, exact
    halves included."""
    encode, _ = parity.import_pyserini()
    rng = np.random.default_rng(0)
    halves = ((2 * np.arange(200) + 1) * 5 / 512).astype(np.float32)  # w / 5 * 256 = k + 0.5 exactly
    w = np.concatenate([rng.uniform(0, 4, 2000).astype(np.float32), halves])
    theirs = encode.SpladeQueryEncoder._get_encoded_query_token_wight_dicts(
        None, [{str(i): float(x) for i, x in enumerate(w)}])[0]
    assert parity.pyserini_quantize(w).tolist() == [theirs[str(i)] for i in range(len(w))]


@pytest.mark.precision_sensitive
def test_splade_tiny_vectors_equal_pyserini_on_three_texts():
    """lsr-eval's float vectors (specials kept, no cap) quantised Pyserini's way = Pyserini's document encoder."""
    import torch

    from lsr_eval.errors import InputError
    from lsr_eval.models.encoder import SpladeEncoder
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.sparsify import Sparsify

    try:
        folder = resolve_model("splade-tiny")
    except InputError as e:
        pytest.skip(str(e))
    texts = ["Aspirin reduces the risk of heart attack in adults with cardiovascular disease.",
             "0-dimensional biomaterials show inductive properties.",
             "Vitamin D deficiency is associated with bone loss and fractures in older women. " * 3]
    ours = SpladeEncoder.from_pretrained(folder, 256, sparsify=Sparsify(drop_special=False))
    enc = ours.encode(texts, sparse=True)
    rows = parity.row_maps([str(i) for i in range(3)], enc.weights, ours.terms, parity.pyserini_quantize)
    encode, _ = parity.import_pyserini()
    theirs_encoder = parity.recording(encode.SpladeDocumentEncoder)(folder, device="cpu")
    with torch.no_grad():
        theirs = theirs_encoder.encode(texts, max_length=256)
    for i, (mine, py) in enumerate(zip(rows.values(), theirs)):
        positive = {t: v for t, v in py.items() if v > 0}
        assert len(mine) > 10
        assert mine == positive, f"text {i}: {set(mine.items()) ^ set(positive.items())}"
        floats = theirs_encoder.recorded[i][0]
        s, e = enc.weights.indptr[i], enc.weights.indptr[i + 1]
        ours_f = {ours.terms[c]: float(v) for c, v in zip(enc.weights.indices[s:e], enc.weights.data[s:e])}
        assert set(ours_f) == set(floats)
        assert max(abs(ours_f[t] - floats[t]) for t in floats) < 1e-5


def test_float_top_by_hand():
    """Exact float ranking: special column dropped, the query's own id left out, zero scores never kept."""
    import scipy.sparse as sp

    # columns: 0 = special, 1..3 terms. docs d1 = (9, 1, 0, 0), d2 = (0, 0, 2, 0), q2 = (0, 0.5, 0.5, 0)
    docs = sp.csr_matrix(np.array([[9, 1, 0, 0], [0, 0, 2, 0], [0, 0.5, 0.5, 0]], dtype=np.float32))
    queries = sp.csr_matrix(np.array([[5, 1, 1, 0], [0, 0, 0, 1]], dtype=np.float32))
    # query q2 (id "q2" is also a document id): scores d1 1, d2 2, q2 1 -> q2 removed
    top = parity.float_top(queries, docs, ["q2", "q9"], ["d1", "d2", "q2"], {0}, remove_query=True, depth=2)
    assert top == {"q2": {"d2", "d1"}, "q9": set()}
    top = parity.float_top(queries, docs, ["q2", "q9"], ["d1", "d2", "q2"], {0}, remove_query=False, depth=1)
    assert top == {"q2": {"d2"}, "q9": set()}
