"""BM25 multifield (title and text as separate fields, each weighted 1.0) reproduces Pyserini's BEIR "multifield"
regressions, offline, beside the flat condition.

Reference figures (trec_eval, test split, k1=0.9, b=0.4, 1000 hits, self-hits removed):

* Pyserini 1.6.0 ``pyserini/2cr/beir.yaml``, condition ``bm25-multifield`` (``--index beir-v1.0.0-${dataset}.multifield
  --bm25 --remove-query --fields contents=1.0 title=1.0``);
* the same figures in Anserini's regressions, ``src/main/resources/regression/beir-v1.0.0-scifact.multifield.yaml``
  and ``beir-v1.0.0-nfcorpus.multifield.yaml`` (``-collection BeirMultifieldCollection ... -fields title``; search
  ``-bm25 -removeQuery -hits 1000 -fields contents=1.0 title=1.0``), rendered in
  ``docs/regressions/regressions-beir-v1.0.0-{scifact,nfcorpus}.multifield.md``. Their ``index_stats`` give the
  ``contents`` (text) field's total terms, checked here too.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from conftest import shared_path, write_beir

from lsr_eval.cli import main
from lsr_eval.errors import ConfigError

REFERENCE = {
    "scifact": {"nDCG@10": 0.6647, "R@100": 0.9076, "R@1000": 0.9800},
    "nfcorpus": {"nDCG@10": 0.3254, "R@100": 0.2500, "R@1000": 0.3718},
}
#: Anserini's index_stats of the multifield indexes: documents, total terms (of ``contents``).
INDEX_STATS = {"scifact": (5183, 784591), "nfcorpus": (3633, 601950)}
#: Topics of the test split.
QUERIES = {"scifact": 300, "nfcorpus": 323}


@pytest.mark.parametrize("name", ["scifact", "nfcorpus"])
def test_multifield_reproduces_pyserini(name, tmp_path, capsys):
    from lsr_eval.anserini.jvm import autoclass

    data = shared_path("beir", name)
    out, work = tmp_path / "out", tmp_path / "work"
    assert main(["bm25", str(data), "--split", "test", "--fields", "title", "text", "--out", str(out),
                 "--work-dir", str(work)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert {k: round(v, 4) for k, v in metrics.items()} == REFERENCE[name]
    assert f"bm25-multifield {name}/test" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["experiment"]["method"] == "bm25-multifield"
    assert manifest["experiment"]["fields"] == ["title", "text"]
    assert manifest["search"]["fields"] == {"contents": 1.0, "title": 1.0}
    assert manifest["index"]["kind"] == "bm25-multifield"
    counts = manifest["counts"]
    documents, total_terms = INDEX_STATS[name]
    assert counts["index"]["documents_read"] == counts["index"]["total_indexed"] == documents
    assert counts["search"]["queries"] == counts["topics"]["queries"] == QUERIES[name]
    reader = autoclass("io.anserini.index.IndexReaderUtils").getReader(manifest["index"]["path"])
    try:
        assert reader.getSumTotalTermFreq("contents") == total_terms
        assert reader.getDocCount("title") > 0
    finally:
        reader.close()
    assert {line.split()[5] for line in (out / "run.trec").read_text().splitlines()} == {"bm25-multifield"}
    # its own cache entry, beside (not instead of) the flat index
    assert [p.name.rsplit("-", 1)[0] for p in (work / "indexes").iterdir()] == [f"bm25-multifield-{name}"]


def _multifield_index(tmp_path, docs, name="mf"):
    from lsr_eval.anserini.collections import write_json_collection
    from lsr_eval.anserini.indexer import build_index
    from lsr_eval.data.types import Document

    write_json_collection([Document(*d) for d in docs], tmp_path / f"{name}-coll", multifield=True)
    counts = build_index(tmp_path / f"{name}-coll", tmp_path / name, "bm25-multifield", threads=1)
    return tmp_path / name, counts


def test_multifield_scores_by_hand(tmp_path):
    """Lucene BM25 per field, idf = ln(1 + (N - df + 0.5) / (df + 0.5)), tf part = tf / (tf + k1 (1 - b + b dl /
    avgdl)), summed over the fields. Text: a "apple banana cherry" (3 terms), b "apple" (1), avgdl 2, df(apple) 2;
    title: a "apple", b "banana", avgdl 1, df(apple) 1."""
    from lsr_eval.anserini.searcher import Bm25Searcher

    index, _ = _multifield_index(tmp_path, [("a", "apple banana cherry", "apple"), ("b", "apple", "banana")])
    k1, b = 0.9, 0.4
    idf_text, idf_title = math.log(1 + 0.5 / 2.5), math.log(1 + 1.5 / 1.5)
    text_a = idf_text / (1 + k1 * (1 - b + b * 3 / 2))
    text_b = idf_text / (1 + k1 * (1 - b + b * 1 / 2))
    title_a = idf_title / (1 + k1)
    with Bm25Searcher(index, fields=["text", "title"]) as both, Bm25Searcher(index, fields=["text"]) as text, \
            Bm25Searcher(index, fields=["title"]) as title:
        assert both.fields == ("title", "text")
        hits = dict(both.search("apple"))
        assert list(hits) == ["a", "b"]
        assert hits["a"] == pytest.approx(text_a + title_a, abs=1e-4)
        assert hits["b"] == pytest.approx(text_b, abs=1e-4)
        assert dict(text.search("apple")) == pytest.approx({"a": text_a, "b": text_b}, abs=1e-4)
        assert dict(title.search("apple")) == pytest.approx({"a": title_a}, abs=1e-4)


def test_blank_text_keeps_its_title_and_index_kinds_are_not_mixed(tmp_path):
    from lsr_eval.anserini.collections import write_json_collection
    from lsr_eval.anserini.indexer import build_index
    from lsr_eval.anserini.searcher import Bm25Searcher
    from lsr_eval.data.types import Document

    # Anserini skips a document whose text is blank; lsr-eval appends it, with its title
    index, counts = _multifield_index(tmp_path, [("a", "apple pie", "fruit"), ("b", " ", "cherry tart")])
    assert (counts.indexed, counts.empty, counts.total_indexed) == (1, 1, 2)
    with Bm25Searcher(index, fields=["title", "text"]) as s:
        assert [d for d, _ in s.search("cherry")] == ["b"]
        assert [d for d, _ in s.search("apple")] == ["a"]
        assert s.num_docs == 2
    # a flat search of a multifield index (text only, silently) and a multifield search of a flat index are refused
    with pytest.raises(ConfigError, match="is a bm25-multifield index .*name the fields to search"):
        Bm25Searcher(index)
    write_json_collection([Document("a", "apple pie", "fruit")], tmp_path / "flat-coll")
    build_index(tmp_path / "flat-coll", tmp_path / "flat", "bm25-flat", threads=1)
    with pytest.raises(ConfigError, match="has no title field: a bm25-multifield index is needed"):
        Bm25Searcher(tmp_path / "flat", fields=["title", "text"])


def test_fields_are_validated_and_flat_keeps_its_identity(tiny_beir, tmp_path, capsys):
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.pipeline.bm25 import Bm25Settings

    flat = Bm25Settings()
    ds = load_dataset(str(tiny_beir), "test")
    # the flat experiment records no `fields` key: flat runs made before multifield existed stay valid
    assert flat.method == "bm25-flat" and set(flat.resolved(ds)) == {"k1", "b", "hits", "remove_query"}
    assert Bm25Settings(fields=["text", "title"]) == Bm25Settings(fields=("title", "text"))
    assert Bm25Settings(fields=["text"]).resolved(ds)["fields"] == ["text"]
    for bad, message in ((["abstract"], "unknown field 'abstract'; allowed: title, text"),
                         (["title", "title"], "'title' is named twice"), ([], "name at least one of title, text")):
        with pytest.raises(ConfigError, match=message):
            Bm25Settings(fields=bad)
    assert main(["bm25", str(tiny_beir), "--fields", "abstract", "--out", str(tmp_path / "x")]) == 2
    assert "unknown field 'abstract'" in capsys.readouterr().err


def test_benchmark_multifield_system_and_its_costs(tmp_path):
    """``fields:`` on a ``kind: bm25`` system; its FLOPs count each field's postings (dimensions field:term), so
    they are the sum of the text-only and the title-only FLOPs over the same index."""
    import yaml
    from conftest import TINY_DOCS, TINY_QRELS, TINY_QUERIES

    from lsr_eval.anserini.term_stats import TermStats
    from lsr_eval.benchmark.config import load_config
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.efficiency.term_flops import term_flops

    data = write_beir(tmp_path / "data", TINY_DOCS, TINY_QUERIES, TINY_QRELS)
    cfg = {"name": "mf", "out": str(tmp_path / "results"),
           "datasets": [{"spec": str(data), "split": "test", "label": "tiny", "measures": ["nDCG@10", "R@1000"]}],
           "systems": [{"name": "flat", "kind": "bm25"},
                       {"name": "multifield", "kind": "bm25", "fields": ["title", "text"]}],
           "efficiency": {"latency_queries": 2, "warmup": 1, "hits": 10}}
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    bad = json.loads(json.dumps(cfg))
    bad["systems"][1]["fields"] = ["title", "body"]
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError, match=r"systems\[1\].*unknown field 'body'; allowed: title, text"):
        load_config(tmp_path / "bad.yaml")

    assert main(["benchmark", str(path), "--work-dir", str(tmp_path / "work"), "--threads", "1"]) == 0
    table = pd.read_csv(tmp_path / "results" / "table.csv").set_index("system")
    assert (table["status"] == "ok").all() and (table["latency_p50_ms"] > 0).all()
    run = tmp_path / "work" / "benchmarks" / "mf" / "runs" / "multifield" / "tiny"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["experiment"]["method"] == "bm25-multifield"
    queries = load_dataset(str(data), "test").queries()
    flops = {}
    for field in ("contents", "title"):
        with TermStats(manifest["index"]["path"], field) as stats:
            terms = [stats.analyze(q.text) for q in queries]
            flops[field] = term_flops(terms, stats.doc_freqs(t for q in terms for t in q), stats.documents).flops
            flops[field + "_postings"] = stats.postings
    row = table.loc["multifield"]
    assert row["flops"] == pytest.approx(flops["contents"] + flops["title"], rel=1e-12)
    assert row["postings"] == flops["contents_postings"] + flops["title_postings"]
    assert flops["title"] > 0 and row["flops"] != table.loc["flat", "flops"]
