"""Stage 3: encoded vectors -> Anserini JsonVectorCollection files (content, counts, errors, workers, gzip)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import scipy.sparse as sp

from lsr_eval.data.types import Document
from lsr_eval.encode import HashingEncoder, SparseVectors, encode_corpus, write_vectors
from lsr_eval.errors import InputError, OutputExistsError
from lsr_eval.export import export_documents
from lsr_eval.export.jsonl import std_dumps

EXP = {"dataset": "toy"}
VOCAB = ["[CLS]", "the", "##ing", "café", "x"]


def folder(tmp_path, rows: list[dict[int, float]], ids: list[str] | None = None, vocab=VOCAB, shard_size=2):
    dense = np.zeros((len(rows), len(vocab)), dtype=np.float32)
    for i, r in enumerate(rows):
        for j, w in r.items():
            dense[i, j] = w
    ids = ids or [f"d{i}" for i in range(len(rows))]
    write_vectors(SparseVectors(ids, sp.csr_matrix(dense), list(vocab)), tmp_path / "v", EXP, shard_size=shard_size)
    return tmp_path / "v"


def read_lines(path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_lines_hand_checked_empty_kept_and_counted(tmp_path):
    src = folder(tmp_path, [{1: 1.234, 3: 0.005, 4: 2.0}, {}, {2: 0.004}, {0: 0.125, 2: 0.375}, {4: 0.5}])
    sections = export_documents(src, tmp_path / "e", EXP, progress=False)
    files = sorted((tmp_path / "e" / "docs").glob("docs-*.jsonl"))
    assert [f.name for f in files] == ["docs-00000.jsonl", "docs-00001.jsonl", "docs-00002.jsonl"]
    lines = [doc for f in files for doc in read_lines(f)]
    assert lines == [
        {"id": "d0", "contents": "", "vector": {"the": 123, "x": 200}},  # 0.005 -> 0: dropped
        {"id": "d1", "contents": "", "vector": {}},  # empty: kept
        {"id": "d2", "contents": "", "vector": {}},  # emptied by quantisation: kept
        {"id": "d3", "contents": "", "vector": {"[CLS]": 12, "##ing": 38}},
        {"id": "d4", "contents": "", "vector": {"x": 50}},
    ]
    c = sections["counts"]
    assert c == {"documents_in": 5, "documents_out": 5, "empty_vectors": 2, "empty_before_quantization": 1,
                 "dropped_zero_weights": 2, "total_postings": 5}
    man = json.loads((tmp_path / "e" / "manifest.json").read_text())
    assert man["stage"] == "export" and man["parameters"]["scale"] == 100
    assert man["vectors"]["avg_active_dims"] == pytest.approx(1.0)
    assert man["outputs"]["files"] == [f.name for f in files]


def test_scale_option_and_unicode(tmp_path):
    src = folder(tmp_path, [{3: 0.5}])
    sections = export_documents(src, tmp_path / "e", EXP, scale=10, progress=False)
    raw = (tmp_path / "e" / "docs" / "docs-00000.jsonl").read_bytes()
    assert raw == '{"id":"d0","contents":"","vector":{"café":5}}\n'.encode()
    assert raw.rstrip(b"\n") == std_dumps({"id": "d0", "contents": "", "vector": {"café": 5}})
    assert sections["parameters"]["scale"] == 10


def test_errors_name_document_or_token_and_leave_no_files(tmp_path):
    src = folder(tmp_path, [{1: 1.0}, {1: 1.0}, {0: 1.0, 1: np.nan}], ids=["a", "b", "nan-doc"])
    with pytest.raises(InputError, match="document 'nan-doc'.*not finite"):
        export_documents(src, tmp_path / "e", EXP, progress=False)
    assert list((tmp_path / "e").iterdir()) == []  # no partial collection, no temporary file, no manifest

    bad_vocab = ["ok", "two words"]
    src2 = folder(tmp_path / "w", [{0: 1.0}, {1: 0.3}], ids=["p", "q"], vocab=bad_vocab)
    with pytest.raises(InputError, match=r"token 'two words' \(vocabulary id 1\) contains whitespace.*'q'"):
        export_documents(src2, tmp_path / "e2", EXP, progress=False)

    src3 = folder(tmp_path / "n", [{0: -0.1}], ids=["neg-doc"])
    with pytest.raises(InputError, match="document 'neg-doc'.*negative"):
        export_documents(src3, tmp_path / "e3", EXP, progress=False)


def test_workers_and_gzip_give_the_same_documents(tmp_path):
    enc = HashingEncoder(vocab_size=50)
    docs = [Document(f"d{i}", " ".join(f"t{j}" for j in range(i % 17))) for i in range(60)]
    encode_corpus(docs, enc, tmp_path / "v", EXP, shard_size=7, progress=False)
    export_documents(tmp_path / "v", tmp_path / "one", EXP, progress=False)
    s = export_documents(tmp_path / "v", tmp_path / "gz", EXP, workers=2, compress=True, progress=False)
    one = [d for f in sorted((tmp_path / "one" / "docs").glob("docs-*.jsonl")) for d in read_lines(f)]
    gz = [d for f in sorted((tmp_path / "gz" / "docs").glob("docs-*.jsonl.gz")) for d in read_lines(f)]
    assert len(s["outputs"]["files"]) == 9
    assert one == gz and [d["id"] for d in one] == [d.id for d in docs]
    assert s["counts"]["empty_vectors"] == 4  # docs 0, 17, 34, 51 have no words


def test_rerun_replaces_files(tmp_path):
    src = folder(tmp_path, [{1: 1.0}] * 5, shard_size=1)
    export_documents(src, tmp_path / "e", EXP, progress=False)
    assert len(list((tmp_path / "e" / "docs").glob("docs-*"))) == 5
    src2 = folder(tmp_path / "b", [{1: 1.0}] * 5, shard_size=5)
    export_documents(src2, tmp_path / "e", EXP, progress=False)  # same experiment: earlier files are replaced
    assert [f.name for f in (tmp_path / "e" / "docs").glob("docs-*")] == ["docs-00000.jsonl"]
    (tmp_path / "e" / "docs" / "notes.json").write_text("{}")
    with pytest.raises(OutputExistsError, match="notes.json"):
        export_documents(src2, tmp_path / "e", EXP, progress=False)
