"""A dev split carved from training queries: seeded, disjoint from the rest, the other splits linked untouched."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import write_beir

from lsr_eval.data.splits import carve_dev_split
from lsr_eval.data.trec_files import read_qrels
from lsr_eval.errors import InputError

DOCS = [{"_id": f"d{i}", "title": "", "text": f"doc {i}"} for i in range(4)]
QUERIES = [{"_id": f"q{i}", "text": f"query {i}"} for i in range(6)]
QRELS = [(f"q{i}", f"d{i % 4}", 1) for i in range(6)] + [("q0", "d3", 2)]


def test_dev_and_fit_partition_the_split(tmp_path):
    src = write_beir(tmp_path / "src", DOCS, QUERIES, QRELS, split="train")
    (src / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq5\td1\t1\n")
    counts = carve_dev_split(src, tmp_path / "out", n=2, seed=4)
    # the qids sorted, then default_rng(4) picks 2 positions of 6 without replacement
    picked = sorted(np.random.default_rng(4).choice(6, size=2, replace=False).tolist())
    assert counts["dev_qids"] == [f"q{i}" for i in picked]
    assert (counts["queries"], counts["dev"], counts["fit"]) == (6, 2, 4)
    dev = read_qrels(tmp_path / "out" / "qrels" / "dev.tsv")
    fit = read_qrels(tmp_path / "out" / "qrels" / "fit.tsv")
    assert sorted(dev) == counts["dev_qids"] and not set(dev) & set(fit) and len(dev) + len(fit) == 6
    if "q0" in dev:
        assert dev["q0"] == {"d0": 1, "d3": 2}                       # every judgment of a query moves with it
    assert (tmp_path / "out" / "qrels" / "test.tsv").read_text() == (src / "qrels" / "test.tsv").read_text()
    assert (tmp_path / "out" / "corpus.jsonl").read_text() == (src / "corpus.jsonl").read_text()


def test_bad_requests_name_the_file(tmp_path):
    src = write_beir(tmp_path / "src", DOCS, QUERIES, QRELS, split="train")
    with pytest.raises(InputError, match=r"qrels/validation.tsv: no such qrels file"):
        carve_dev_split(src, tmp_path / "out", split="validation", n=1, seed=0)
    with pytest.raises(InputError, match=r"6 judged queries; a dev split of n=6"):
        carve_dev_split(src, tmp_path / "out", n=6, seed=0)


def test_source_files_are_never_deleted(tmp_path):
    src = write_beir(tmp_path / "src", DOCS, QUERIES, QRELS, split="train")
    corpus = (src / "corpus.jsonl").read_text()
    with pytest.raises(InputError, match="the output is the source folder"):
        carve_dev_split(src, src, n=2, seed=0)
    other = write_beir(tmp_path / "other", DOCS[:1], QUERIES, QRELS, split="train")  # a real data set as --out
    with pytest.raises(InputError, match="a file, not a link"):
        carve_dev_split(src, other, n=2, seed=0)
    assert (src / "corpus.jsonl").read_text() == corpus and (src / "qrels" / "train.tsv").is_file()
    assert not (other / "corpus.jsonl").is_symlink()
    carve_dev_split(src, tmp_path / "out", n=2, seed=0)
    carve_dev_split(src, tmp_path / "out", n=3, seed=1)  # a rerun replaces its own links
    assert (tmp_path / "out" / "corpus.jsonl").read_text() == corpus
