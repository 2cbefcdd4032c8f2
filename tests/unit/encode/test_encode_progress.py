"""Progress totals of an encoding and the per-run record (precision, device) in its manifest."""

from __future__ import annotations

from lsr_eval.data.datasets import BeirFolder
from lsr_eval.data.types import Document
from lsr_eval.encode import HashingEncoder, encode_corpus
from lsr_eval.encode.progress import count_lines, expected_documents

EXP = {"stage": "encode", "test": "progress"}


def test_count_lines(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_bytes(b"")
    assert count_lines(f) == 0
    f.write_bytes(b'{"a": 1}\n{"a": 2}\n')
    assert count_lines(f) == 2
    f.write_bytes(b'{"a": 1}\n{"a": 2}')   # no final newline
    assert count_lines(f) == 2


def test_expected_documents_of_a_beir_folder(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": "b"}\n'
                                           '{"_id": "d3", "text": "c"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert expected_documents(BeirFolder(tmp_path)) == 3
    assert expected_documents(object()) is None


def test_bar_moves_every_batch_and_run_info_is_recorded(tmp_path, monkeypatch):
    import tqdm

    seen = {}
    real = tqdm.tqdm

    class Spy(real):
        def __init__(self, *a, **k):
            seen["total"] = k.get("total")
            seen["updates"] = []
            super().__init__(*a, **k)

        def update(self, n=1):
            seen["updates"].append(n)
            return super().update(n)

    monkeypatch.setattr(tqdm, "tqdm", Spy)
    docs = [Document(f"d{i}", f"text number {i} " * (i % 5 + 1)) for i in range(10)]
    summary = encode_corpus(docs, HashingEncoder(vocab_size=32), tmp_path / "v", EXP, batch_size=3,
                            window_batches=2, run_info={"precision": {"name": "fp32"}, "device": "cpu"})
    assert seen["total"] == 10                       # a list has a length
    assert seen["updates"] == [3, 3, 3, 1]           # one update per batch, not per window or shard
    run = summary.manifest["parameters"]["runs"][0]
    assert run["precision"] == {"name": "fp32"} and run["device"] == "cpu"
