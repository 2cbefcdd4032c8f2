"""BM25 on PISA: Anserini's analysed terms, counted, scored by PISA's BM25 on SciFact; checked against Lucene's own
document vectors and against Anserini's BM25 run."""

from __future__ import annotations

import json

import pytest
from conftest import shared_path
from test_engine_pisa import requires_pisa

from lsr_eval.cli import main


@requires_pisa
def test_bm25_on_pisa_scifact_matches_lucenes_terms_and_anserinis_run(tmp_path, capsys):
    from lsr_eval.anserini.jvm import autoclass
    from lsr_eval.export.collection import iter_collection
    from lsr_eval.runs.trec import read_run

    scifact, work = shared_path("beir", "scifact"), tmp_path / "work"
    args = [str(scifact), "--split", "test", "--work-dir", str(work)]
    assert main(["bm25", *args, "--out", str(tmp_path / "anserini")]) == 0
    assert main(["bm25", *args, "--out", str(tmp_path / "pisa"), "--engine", "pisa",
                 "--engine-option", "query_algorithm=block_max_wand", "--engine-option", "block_size=40"]) == 0
    assert "bm25-flat (pisa) scifact/test" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "pisa" / "manifest.json").read_text())
    assert manifest["counts"]["index"]["documents_indexed"] == 5183
    assert manifest["counts"]["search"]["queries"] == 300
    assert manifest["experiment"]["engine"] == "pisa"
    search = manifest["search"]
    assert (search["scorer"], search["bm25_k1"], search["bm25_b"], search["query_algorithm"]) == \
        ("bm25", 0.9, 0.4, "block_max_wand")
    assert search["block_max_data"] == "bm25.k1-0.9.b-0.4.q0.bmw.40" and "Porter" in search["analyzer"]

    # the documents PISA indexed hold the terms and frequencies Lucene indexed (its stored document vectors)
    [slot] = [p for p in (work / "indexes").iterdir() if p.name.startswith("bm25-flat-") and p.is_dir()]
    reader_utils = autoclass("io.anserini.index.IndexReaderUtils")
    reader = reader_utils.getReader(str(slot / "index"))
    from lsr_eval.anserini.analysis import write_term_frequencies
    from lsr_eval.data.datasets import load_dataset

    docs = list(load_dataset(str(scifact), "test").docs())[:200:7]
    write_term_frequencies(docs, tmp_path / "tf")
    for docid, vector in iter_collection(tmp_path / "tf"):
        lucene = reader_utils.getDocumentVector(reader, docid)
        assert vector == {str(k): int(lucene.get(k)) for k in lucene.keySet().toArray()}, docid

    # the same BM25 (analyzer, k1, b) in another engine: PISA's idf and exact lengths move a few rankings only
    metrics = {e: json.loads((tmp_path / e / "metrics.json").read_text()) for e in ("anserini", "pisa")}
    assert metrics["pisa"]["nDCG@10"] == pytest.approx(metrics["anserini"]["nDCG@10"], abs=0.005)
    assert metrics["pisa"]["R@1000"] == pytest.approx(metrics["anserini"]["R@1000"], abs=0.005)
    runs = {e: read_run(tmp_path / e / "run.trec") for e in ("anserini", "pisa")}
    top10 = [len(set(list(runs["pisa"][q])[:10]) & set(list(runs["anserini"][q])[:10])) / 10 for q in runs["anserini"]]
    assert sum(top10) / len(top10) > 0.9


def test_bm25_engine_settings_are_checked(tmp_path):
    import yaml

    from lsr_eval.benchmark.config import load_config
    from lsr_eval.errors import ConfigError
    from lsr_eval.pipeline.bm25 import Bm25Settings

    bench = tmp_path / "b.yaml"   # PISA's own check of an option's value, said of the file and entry
    bench.write_text(yaml.safe_dump({"name": "b", "out": str(tmp_path / "o"), "datasets": [str(tmp_path)],
                                     "systems": [{"name": "bm", "kind": "bm25", "engine": "pisa",
                                                  "engine_options": {"block_size": 0}}]}))
    with pytest.raises(ConfigError, match=r"b\.yaml: systems\[0\]: pisa: block_size must be >= 1, got 0$"):
        load_config(bench)

    with pytest.raises(ConfigError, match="^engine must be one of anserini, pisa, got 'seismic'$"):
        Bm25Settings(engine="seismic")
    with pytest.raises(ConfigError, match="engine_options apply to BM25 on engine pisa only"):
        Bm25Settings(engine_options={"block_size": 40})
    with pytest.raises(ConfigError, match="no engine option 'bm25_k1'.*k1 and b are the system's own"):
        Bm25Settings(engine="pisa", engine_options={"bm25_k1": 1.2})
    with pytest.raises(ConfigError, match="leave out fields"):
        Bm25Settings(engine="pisa", fields=("title", "text"))
