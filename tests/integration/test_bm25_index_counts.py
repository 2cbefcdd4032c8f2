"""The BM25 index serves every split of a corpus, so its manifest records the corpus's counts, not the judged
documents of the split that happened to build it; each run records its own split's (counts.topics)."""

from __future__ import annotations

import json
import shutil

from conftest import TINY_DOCS, TINY_QRELS, TINY_QUERIES, write_beir

from lsr_eval.cli import main


def test_each_split_records_its_own_judged_documents(tmp_path):
    data = write_beir(tmp_path / "data", TINY_DOCS, TINY_QUERIES, TINY_QRELS, split="test")
    shutil.copy(data / "qrels" / "test.tsv", data / "qrels" / "dev.tsv")
    with open(data / "qrels" / "test.tsv", "a", encoding="utf-8") as f:   # test judges one document more
        f.write(f"{TINY_QRELS[0][0]}\t{TINY_DOCS[-1]['_id']}\t1\n")
    work = tmp_path / "work"
    judged = {}
    for split in ("dev", "test"):                       # dev builds the shared index, test reuses it
        assert main(["bm25", str(data), "--split", split, "--out", str(tmp_path / split), "--work-dir", str(work),
                     "--threads", "1"]) == 0
        counts = json.loads((tmp_path / split / "manifest.json").read_text())["counts"]
        assert "judged_documents" not in counts["index"] and counts["index"]["documents_read"] == len(TINY_DOCS)
        judged[split] = counts["topics"]["judged_documents"]
    assert judged["test"] == judged["dev"] + 1
