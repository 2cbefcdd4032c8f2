"""The Python API's files: ``Splade.encode`` of a dataset uses the work folder's encoding cache (the pipelines' one:
a second encode runs no forward pass), in-memory encoding writes nothing, and an ``Index`` built without ``out=``
removes its temporary folder when it is closed, leaves a ``with`` block or is garbage collected."""

from __future__ import annotations

import gc
import logging
import tempfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import TINY_DOCS, TINY_QRELS, TINY_QUERIES, write_beir
from tiny_models import tiny_bert


@pytest.fixture
def tiny_data(tmp_path: Path) -> Path:
    return write_beir(tmp_path / "tiny", TINY_DOCS, TINY_QUERIES, TINY_QRELS)


def _splade(doc_top_k: int | None = None, **kwargs):
    """A Splade encoder of the tiny BERT (128 positions)."""
    import lsr_eval

    encode = lsr_eval.EncodeOptions(max_length_d=64, max_length_q=32, doc_top_k=doc_top_k)
    return lsr_eval.Splade(str(tiny_bert()), encode=encode, **kwargs)


def _count_forward(monkeypatch, enc) -> list[int]:
    """Counts the texts the document encoder's forward pass is called on (one entry per call)."""
    calls: list[int] = []
    document = enc.model.document
    forward = document.encode

    def counted(texts, *args, **kwargs):
        calls.append(len(texts))
        return forward(texts, *args, **kwargs)

    monkeypatch.setattr(document, "encode", counted)
    return calls


def _same(a, b) -> None:
    assert a.ids == b.ids and a.vocab == b.vocab
    assert (a.matrix != b.matrix).nnz == 0


def test_second_encode_of_a_dataset_loads_from_the_cache(tiny_data, tmp_path, monkeypatch, caplog):
    import lsr_eval

    ds = lsr_eval.load_dataset(str(tiny_data))
    work = tmp_path / "work"
    enc = _splade(work=work)
    calls = _count_forward(monkeypatch, enc)
    first = enc.encode(ds)
    assert sum(calls) == len(TINY_DOCS) and enc.last_encoding.shards_written == 1
    slot = enc.last_encoding.folder
    assert slot.parent == work / "encodings" and (slot / "manifest.json").is_file()

    with caplog.at_level(logging.INFO, logger="lsr_eval.pipeline.splade"):
        again = _splade(work=work)
        again_calls = _count_forward(monkeypatch, again)
        second = again.encode(ds.docs)  # the dataset's docs method is the same corpus
    assert again_calls == []  # no forward pass: every vector comes from the cache
    assert enc.last_encoding.folder == again.last_encoding.folder
    assert again.last_encoding.shards_written == 0 and again.last_encoding.shards_verified == 1
    assert f"reused encoding {slot}" in caplog.text
    _same(first, second)
    assert first.ids == [d["_id"] for d in TINY_DOCS]

    in_memory = _splade(cache=False).encode(ds)
    assert in_memory.ids == first.ids and in_memory.vocab == first.vocab
    np.testing.assert_allclose(in_memory.matrix.toarray(), first.matrix.toarray(), rtol=1e-5, atol=1e-6)


def test_other_settings_are_another_cache_entry(tiny_data, tmp_path):
    import lsr_eval

    ds = lsr_eval.load_dataset(str(tiny_data))
    full = _splade(work=tmp_path)
    pruned = _splade(work=tmp_path, doc_top_k=3)
    full.encode(ds)
    vectors = pruned.encode(ds)
    assert pruned.last_encoding.shards_written == 1 and pruned.last_encoding.folder != full.last_encoding.folder
    assert np.diff(vectors.matrix.indptr).max() <= 3


def test_in_memory_encoding_writes_nothing(tiny_data, tmp_path, monkeypatch):
    import lsr_eval

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LSR_EVAL_WORK", str(tmp_path / "env-work"))
    ds = lsr_eval.load_dataset(str(tiny_data))
    enc = _splade(cache=False)
    assert enc.encode(ds).ids == [d["_id"] for d in TINY_DOCS] and enc.last_encoding is None
    cached = _splade()
    assert cached.encode(["a text", "another text"]).ids == ["0", "1"]  # not a dataset: in memory
    assert cached.last_encoding is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny"]
    cached.encode(ds)  # the default work folder: $LSR_EVAL_WORK, as the command line's
    assert cached.last_encoding.folder.parent == tmp_path / "env-work" / "encodings"


def _vectors():
    from lsr_eval.encode.protocol import SparseVectors

    vocab = ["apple", "banana", "cherry", "date"]
    docs = SparseVectors(["d1", "d2", "d3"], sp.csr_matrix(np.array(
        [[1.0, 0.5, 0, 0], [0, 2.0, 0, 0.3], [0, 0, 1.5, 1.0]], dtype=np.float32)), vocab)
    queries = SparseVectors(["q1", "q2"], sp.csr_matrix(np.array(
        [[1.0, 0, 0, 0], [0, 0, 1.0, 1.0]], dtype=np.float32)), vocab)
    return docs, queries


@pytest.fixture
def pisa():
    pytest.importorskip("pyterrier_pisa")
    return "pisa"


def test_index_removes_its_temporary_folder(pisa, tmp_path, monkeypatch):
    import lsr_eval
    from lsr_eval.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    docs, queries = _vectors()

    index = lsr_eval.Index.build(docs, engine=pisa)
    folder = index.path.parent
    assert folder.parent == tmp_path / "tmp" and index.path.exists()
    run = index.search(queries, k=3)
    assert list(run["q1"]) == ["d1"] and list(run["q2"])[0] == "d3"
    index.close()
    assert not folder.exists() and list((tmp_path / "tmp").iterdir()) == []
    index.close()  # twice: nothing
    with pytest.raises(ConfigError, match="closed"):
        index.search(queries)

    with lsr_eval.Index.build(docs, engine=pisa) as index:
        folder = index.path.parent
        assert index.search(queries, k=3) == run
    assert not folder.exists()

    index = lsr_eval.Index.build(docs, engine=pisa)
    folder = index.path.parent
    del index
    gc.collect()
    assert not folder.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]  # no ./work either


def test_index_under_a_work_folder_leaves_nothing(pisa, tmp_path):
    import lsr_eval

    docs, queries = _vectors()
    with lsr_eval.Index.build(docs, engine=pisa, work=tmp_path / "work") as index:
        assert index.path.parent.parent == tmp_path / "work" / "api"
        index.search(queries)
    assert not (tmp_path / "work" / "api").exists()


def test_index_out_keeps_its_files(pisa, tmp_path):
    import lsr_eval
    from lsr_eval.errors import OutputExistsError

    docs, queries = _vectors()
    with lsr_eval.Index.build(docs, engine=pisa, out=tmp_path / "kept") as index:
        run = index.search(queries, k=3)
    assert index.path == tmp_path / "kept" / "index" and index.path.exists()
    assert (tmp_path / "kept" / "manifest.json").is_file() and (tmp_path / "kept" / "vectors").is_dir()
    with pytest.raises(OutputExistsError, match="not an empty folder"):
        lsr_eval.Index.build(docs, engine=pisa, out=tmp_path / "kept")
    assert run["q1"] and (tmp_path / "kept" / "index").exists()


def test_index_of_a_cached_encoding_goes_to_the_work_folders_caches(pisa, tiny_data, tmp_path):
    """Vectors that are, unchanged, an encoding of the work folder's cache are exported and indexed into its caches
    (the pipelines' slots, kept after close and reused); vectors changed since, or read from a folder that is not
    a cache slot, get a temporary index."""
    import shutil
    from dataclasses import replace

    import lsr_eval
    from lsr_eval.encode.reader import load_vectors
    from lsr_eval.errors import ConfigError
    from lsr_eval.workdir import slot_label

    work = tmp_path / "work"
    ds = lsr_eval.load_dataset(str(tiny_data))
    enc = _splade(work=work)
    docs, queries = enc.encode(ds), enc.encode_queries(ds)
    with lsr_eval.Index.build(docs, engine=pisa) as index:
        run = index.search(queries, k=3)
    cached = index.path
    assert cached.parent.parent == work / "indexes" and cached.parent.name.startswith("impact-pisa-")
    assert cached.exists() and index.counts["index"]["documents_indexed"] == len(TINY_DOCS)
    built = (cached.parent / "manifest.json").stat().st_mtime_ns
    again = lsr_eval.Index.build(enc.encode(ds), engine=pisa, work=tmp_path / "elsewhere")
    assert again.path == cached and (cached.parent / "manifest.json").stat().st_mtime_ns == built  # reused
    assert again.search(queries, k=3) == run
    label = slot_label(enc.last_encoding.folder)
    assert [slot_label(p) for p in (work / "collections").iterdir()] == [label]  # one export

    copy = shutil.copytree(enc.last_encoding.folder, tmp_path / "my-encoding")  # an encoding, not a cache slot
    changed = enc.encode(ds)
    changed.matrix.data[0] *= 2  # changed in memory since it was read
    for vectors in (load_vectors(copy), replace(docs, source=None), changed):
        with lsr_eval.Index.build(vectors, engine=pisa, work=work) as index:
            assert index.path.parent.parent == work / "api"
            if vectors is not changed:  # the same vectors through the temporary path: the same run
                assert index.search(queries, k=3) == run
    assert not (work / "api").exists()
    with pytest.raises(ConfigError, match="scale must be a number > 0"):
        lsr_eval.Index.build(docs, engine=pisa, scale="100")


def test_vectors_know_their_folder_while_unchanged(tmp_path):
    from dataclasses import replace

    docs, _ = _vectors()
    assert docs.source is None and docs.source_folder() is None
    read = replace(docs, source=("enc", docs.digest()))
    assert read.source_folder() == "enc" and read == docs  # the source takes no part in equality
    read.ids.append("d4")  # the same vectors object, changed: ids, vocabulary and CSR arrays are in the digest
    assert read.source_folder() is None
    read.ids.pop()
    assert read.source_folder() == "enc"
    read.matrix.data[1] = 0.25
    assert read.source_folder() is None


def test_settings_given_flat_still_work_for_a_release_with_a_warning():
    import lsr_eval
    from lsr_eval.errors import ConfigError

    with pytest.warns(DeprecationWarning, match=r"doc_top_k=\.\.\..*encode=EncodeOptions\(\.\.\.\)"):
        flat = lsr_eval.Splade("m", doc_top_k=4, hits=9)
    typed = lsr_eval.Splade("m", encode=lsr_eval.EncodeOptions(doc_top_k=4), search=lsr_eval.SearchOptions(hits=9))
    assert flat.settings == typed.settings
    with pytest.raises(ConfigError, match="doc_top_k is given both flat and in encode="):
        lsr_eval.Splade("m", encode=lsr_eval.EncodeOptions(), doc_top_k=4)
    with pytest.raises(ConfigError, match=r"unknown setting 'doc_topk'; settings by stage: load=LoadOptions\(query_mo"):
        lsr_eval.Splade("m", doc_topk=4)
    with pytest.warns(DeprecationWarning, match="precision='bf16'"):
        assert lsr_eval.Splade("m", bf16=True).settings.load.precision == "bf16"
    with pytest.raises(ConfigError, match=r"SpladeSettings: encode must be EncodeOptions, got \{'doc_top_k': 4\}"):
        lsr_eval.Splade("m", encode={"doc_top_k": 4})
