"""Stage 2: streaming corpus encoding into shards (order, counts, resume after a crash, rank split, errors)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from lsr_eval.data.types import Document
from lsr_eval.encode import (
    EncodedBatch,
    HashingEncoder,
    encode_corpus,
    finalize_encoding,
    iter_vectors,
    load_matrix,
    read_vocab,
    resolve_rank,
)
from lsr_eval.encode.store import read_shard_ids
from lsr_eval.errors import ConfigError, InputError, LsrEvalError, OutputExistsError

EXP = {"dataset": "toy", "model": "hashing"}


def make_docs(n: int) -> list[Document]:
    """Documents of varied lengths (so that length sorting reorders them); doc 3 is empty."""
    docs = []
    for i in range(n):
        words = " ".join(f"w{(i * 7 + j) % 41}" for j in range((i * 13) % 29))
        docs.append(Document(f"d{i}", words, title="" if i % 4 else f"title{i}"))
    docs[3] = Document("d3", "")
    return docs


def reference(enc: HashingEncoder, docs: list[Document]) -> sp.csr_matrix:
    """Each document encoded alone: what the sharded, length-sorted output must equal row by row."""
    return sp.vstack([enc.encode_batch([d.contents]).weights for d in docs], format="csr")


class CountingEncoder:
    """Wraps an encoder: counts texts, records batches, optionally raises after ``fail_after`` batches."""

    def __init__(self, inner: HashingEncoder, fail_after: int | None = None) -> None:
        self.inner, self.fail_after = inner, fail_after
        self.vocab = inner.vocab
        self.batches: list[list[str]] = []

    def encode_batch(self, texts: list[str]) -> EncodedBatch:
        if self.fail_after is not None and len(self.batches) >= self.fail_after:
            raise RuntimeError("simulated crash")
        self.batches.append(list(texts))
        return self.inner.encode_batch(texts)

    def length_key(self, text: str) -> int:
        return len(text)


def test_order_restored_and_counts(tmp_path):
    enc = HashingEncoder(vocab_size=64, max_tokens=20)
    docs = make_docs(57)
    rec = CountingEncoder(enc)
    summary = encode_corpus(iter(docs), rec, tmp_path / "v", EXP, encoder_info=enc.describe(), shard_size=20,
                            batch_size=4, window_batches=3, progress=False)
    ids, m = load_matrix(tmp_path / "v")
    assert ids == [d.id for d in docs]
    assert (m != reference(enc, docs)).nnz == 0
    # batches inside a window really were length-sorted (longest first), so the order had to be restored
    assert [len(t) for t in rec.batches[0]] == sorted((len(t) for t in rec.batches[0]), reverse=True)
    assert rec.batches[0] != [d.contents for d in docs[:4]]
    assert sorted(p.name for p in (tmp_path / "v").glob("shard-*.npz")) == [
        "shard-00000.npz", "shard-00001.npz", "shard-00002.npz"]
    assert read_shard_ids(tmp_path / "v" / "shard-00002.npz") == [f"d{i}" for i in range(40, 57)]

    man = json.loads((tmp_path / "v" / "manifest.json").read_text())
    n_tokens = [min(len(d.contents.split()), 20) for d in docs]
    assert man["stage"] == "encode" and man["experiment"] == EXP
    assert man["counts"]["documents_in"] == man["counts"]["documents_out"] == 57
    assert man["counts"]["empty_vectors"] == sum(1 for d in docs if not d.contents.split())
    assert man["counts"]["truncated_documents"] == sum(1 for d in docs if len(d.contents.split()) > 20)
    assert man["counts"]["truncated_documents"] > 0
    assert man["counts"]["real_tokens"] == sum(n_tokens)
    assert man["counts"]["total_postings"] == m.nnz
    assert man["vectors"]["avg_active_dims"] == pytest.approx(m.nnz / 57)
    assert man["encoder"] == enc.describe()
    assert man["parameters"]["shard_size"] == 20 and man["parameters"]["vocab_size"] == 64
    assert man["throughput"]["docs_per_s"] > 0
    assert summary.manifest is not None and summary.shards_written == 3
    assert read_vocab(tmp_path / "v") == enc.vocab
    first = next(iter_vectors(tmp_path / "v"))
    assert first[0] == "d0" and first[1].dtype == np.int32 and first[2].dtype == np.float32
    assert np.array_equal(first[1], reference(enc, docs[:1]).indices)


def test_input_is_streamed_window_by_window(tmp_path):
    pulled = 0

    def stream():
        nonlocal pulled
        for d in make_docs(200):
            pulled += 1
            yield d

    class Probe(CountingEncoder):
        def encode_batch(self, texts):
            self.pulled_at_first = getattr(self, "pulled_at_first", pulled)
            return super().encode_batch(texts)

    probe = Probe(HashingEncoder(vocab_size=32))
    encode_corpus(stream(), probe, tmp_path / "v", EXP, shard_size=100, batch_size=5, window_batches=2,
                  progress=False)
    assert probe.pulled_at_first == 10  # one window (2 batches x 5), not the corpus
    assert pulled == 200


def test_resume_after_crash_every_document_once(tmp_path):
    enc = HashingEncoder(vocab_size=64)
    docs = make_docs(53)
    crashing = CountingEncoder(enc, fail_after=12)  # shard = 5 batches of 2: shards 0, 1 done, crash in shard 2
    with pytest.raises(RuntimeError, match="simulated crash"):
        encode_corpus(docs, crashing, tmp_path / "v", EXP, shard_size=10, batch_size=2, window_batches=2,
                      progress=False)
    assert sorted(p.name for p in (tmp_path / "v").glob("shard-*.npz")) == ["shard-00000.npz", "shard-00001.npz"]
    assert not list((tmp_path / "v").glob("*.tmp-*")) and not (tmp_path / "v" / "manifest.json").exists()
    with pytest.raises(InputError, match="not every rank has finished|no rank"):
        finalize_encoding(tmp_path / "v")

    (tmp_path / "v" / "shard-00002.npz.tmp-999-dead").write_bytes(b"partial")  # as left by a killed process
    resumed = CountingEncoder(enc)
    summary = encode_corpus(docs, resumed, tmp_path / "v", EXP, shard_size=10, batch_size=2, window_batches=2,
                            progress=False)
    assert (summary.shards_verified, summary.shards_written) == (2, 4)
    assert sum(len(b) for b in resumed.batches) == 33  # only documents 20..52 were encoded again
    ids, m = load_matrix(tmp_path / "v")
    assert ids == [d.id for d in docs]  # each exactly once, in order
    assert (m != reference(enc, docs)).nnz == 0
    assert summary.manifest["counts"]["documents_out"] == 53
    assert not list((tmp_path / "v").glob("*.tmp-*"))


def test_resume_detects_changed_input(tmp_path):
    enc = HashingEncoder(vocab_size=16)
    docs = make_docs(25)
    encode_corpus(docs, enc, tmp_path / "v", EXP, shard_size=10, progress=False)
    changed = docs[:12] + [Document("new", "x")] + docs[13:]
    with pytest.raises(InputError, match=r"shard-00001.npz does not match the input: at input position 12 .*'d12'"
                                         r".*'new'"):
        encode_corpus(changed, enc, tmp_path / "v", EXP, shard_size=10, progress=False)
    with pytest.raises(InputError, match="position 15 .*'d15', the input has nothing"):
        encode_corpus(docs[:15], enc, tmp_path / "v", EXP, shard_size=10, progress=False)


def test_other_experiment_or_shard_size_refused(tmp_path):
    enc = HashingEncoder(vocab_size=16)
    encode_corpus(make_docs(5), enc, tmp_path / "v", EXP, shard_size=10, progress=False)
    with pytest.raises(OutputExistsError, match="shard_size"):
        encode_corpus(make_docs(5), enc, tmp_path / "v", EXP, shard_size=7, progress=False)
    with pytest.raises(OutputExistsError, match="experiment"):
        encode_corpus(make_docs(5), enc, tmp_path / "v", {"dataset": "other"}, shard_size=10, progress=False)
    s = encode_corpus(make_docs(6), enc, tmp_path / "v", {"dataset": "other"}, shard_size=10, overwrite=True,
                      progress=False)
    assert s.manifest["counts"]["documents_out"] == 6
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "notes.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match="not empty"):
        encode_corpus(make_docs(5), enc, tmp_path / "w", EXP, progress=False)


def test_two_ranks_equal_one_rank(tmp_path):
    enc = HashingEncoder(vocab_size=64)
    docs = make_docs(47)
    encode_corpus(docs, enc, tmp_path / "one", EXP, shard_size=10, batch_size=3, progress=False)
    s0 = encode_corpus(docs, enc, tmp_path / "two", EXP, shard_size=10, batch_size=3, rank=0, world_size=2,
                       progress=False)
    assert s0.manifest is None and s0.shards_written == 3 and s0.shards_of_other_ranks == 2
    assert sorted(p.name for p in (tmp_path / "two").glob("shard-*.npz")) == [
        "shard-00000.npz", "shard-00002.npz", "shard-00004.npz"]
    with pytest.raises(InputError, match=r"missing ranks by world size: \{2: \[1\]\}"):
        finalize_encoding(tmp_path / "two")
    s1 = encode_corpus(docs, enc, tmp_path / "two", EXP, shard_size=10, batch_size=3, rank=1, world_size=2,
                       progress=False)
    assert s1.shards_written == 2
    sections = finalize_encoding(tmp_path / "two")
    assert sections["counts"]["documents_out"] == 47
    ids1, m1 = load_matrix(tmp_path / "one")
    ids2, m2 = load_matrix(tmp_path / "two")
    assert ids1 == ids2 == [d.id for d in docs]
    assert (m1 != m2).nnz == 0
    with pytest.raises(ConfigError, match="distributed"):
        encode_corpus(docs, enc, tmp_path / "two", EXP, shard_size=10, rank=0, world_size=2, overwrite=True,
                      progress=False)


def test_resolve_rank(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert resolve_rank(None, None) == (0, 1)
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert resolve_rank(None, None) == (3, 4)
    assert resolve_rank(1, 2) == (1, 2)
    with pytest.raises(ConfigError):
        resolve_rank(2, 2)
    with pytest.raises(ConfigError):
        resolve_rank(0, None)


def test_duplicate_id_named(tmp_path):
    docs = make_docs(8) + [Document("d5", "again")]
    with pytest.raises(InputError, match=r"duplicate document id 'd5' \(input position 8\)"):
        encode_corpus(docs, HashingEncoder(vocab_size=8), tmp_path / "v", EXP, progress=False)


def test_non_finite_weight_names_document(tmp_path):
    class NanEncoder(CountingEncoder):
        def encode_batch(self, texts):
            batch = super().encode_batch(texts)
            w = batch.weights.copy()
            for i, t in enumerate(texts):
                if t == "boom":
                    w.data[w.indptr[i]] = np.nan
            return EncodedBatch(w, batch.n_tokens, batch.truncated)

    docs = make_docs(6) + [Document("bad-doc", "boom")]
    with pytest.raises(LsrEvalError, match="non-finite weight .* document 'bad-doc'"):
        encode_corpus(docs, NanEncoder(HashingEncoder(vocab_size=8)), tmp_path / "v", EXP, progress=False)


def test_empty_corpus(tmp_path):
    s = encode_corpus([], HashingEncoder(vocab_size=8), tmp_path / "v", EXP, progress=False)
    assert s.manifest["counts"]["documents_out"] == 0
    ids, m = load_matrix(tmp_path / "v")
    assert ids == [] and m.shape == (0, 8)


def test_reader_refuses_unfinished_folder(tmp_path):
    enc = HashingEncoder(vocab_size=8)
    encode_corpus(make_docs(5), enc, tmp_path / "v", EXP, rank=0, world_size=2, shard_size=2, progress=False)
    with pytest.raises(InputError, match="no finalised encoding"):
        load_matrix(tmp_path / "v")


def test_shard_bytes_do_not_depend_on_the_run_that_wrote_them(tmp_path):
    from lsr_eval.encode import store

    w = sp.csr_matrix(np.array([[0.0, 1.5], [2.0, 0.0]], dtype=np.float32))
    for name, seconds in (("a", 1.25), ("b", 9.5)):
        (tmp_path / name).mkdir()
        store.write_shard(tmp_path / name / store.shard_name(0),
                          store.Shard(["d1", "d2"], w, np.array([3, 4]), np.array([False, True]), seconds))
    a, b = (tmp_path / n / "shard-00000.npz" for n in "ab")
    assert a.read_bytes() == b.read_bytes()              # the time lives beside the shard
    assert store.read_shard_stats(a)["seconds"] == 1.25 and store.read_shard(b).seconds == 9.5
    assert sorted(p.name for p in a.parent.iterdir()) == ["shard-00000.npz", "shard-00000.time.json"]
    # a shard of the older format (time inside) still reads; one without any time reads as None
    old = tmp_path / "old.npz"
    with np.load(a) as z:
        np.savez(old, **{k: z[k] for k in z.files}, seconds=np.array(2.5))
    assert store.read_shard_stats(old)["seconds"] == 2.5
    store.shard_time_path(b).unlink()
    assert store.read_shard(b).seconds is None


def test_resumed_encoding_writes_the_same_files(tmp_path):
    enc = HashingEncoder(vocab_size=64)
    docs = make_docs(53)
    encode_corpus(docs, enc, tmp_path / "full", EXP, shard_size=10, batch_size=2, window_batches=2, progress=False)
    with pytest.raises(RuntimeError, match="simulated crash"):
        encode_corpus(docs, CountingEncoder(enc, fail_after=12), tmp_path / "v", EXP, shard_size=10, batch_size=2,
                      window_batches=2, progress=False)
    summary = encode_corpus(docs, enc, tmp_path / "v", EXP, shard_size=10, batch_size=2, window_batches=2,
                            progress=False)
    assert summary.manifest["throughput"]["shards_without_time"] == 0
    shards = sorted((tmp_path / "full").glob("shard-*.npz"))
    assert len(shards) == 6
    for f in shards:
        assert f.read_bytes() == (tmp_path / "v" / f.name).read_bytes(), f.name
