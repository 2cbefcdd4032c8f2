"""The benchmark pipeline on a tiny BEIR folder (test + train splits) with BM25 and a tiny SPLADE."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from conftest import TINY_DOCS, TINY_QRELS, TINY_QUERIES, write_beir
from tiny_models import tiny_bert

from lsr_eval.benchmark.config import load_config
from lsr_eval.cli import main
from lsr_eval.errors import ConfigError

TRAIN_QUERIES = [{"_id": "t1", "text": "dogs chase"}, {"_id": "t2", "text": "dense vectors"},
                 {"_id": "t3", "text": "bird hand"}]
TRAIN_QRELS = [("t1", "d2", 1), ("t2", "d4", 1), ("t3", "d3", 1)]


def _config(tmp_path, **over) -> str:
    data = write_beir(tmp_path / "data", TINY_DOCS, TINY_QUERIES + TRAIN_QUERIES, TINY_QRELS)
    write_beir(tmp_path / "data", TINY_DOCS, TINY_QUERIES + TRAIN_QUERIES, TRAIN_QRELS, split="train")
    cfg = {
        "name": "tiny", "out": str(tmp_path / "results"),
        "datasets": [{"spec": str(data), "split": "test", "tune_split": "train", "label": "tiny",
                      "measures": ["nDCG@10", "RR@10", "R@1000"]}],
        "systems": [{"name": "bm25", "kind": "bm25"},
                    {"name": "splade", "kind": "splade", "model": str(tiny_bert()), "max_length_d": 32,
                     "max_length_q": 16, "doc_top_k": 20, "query_top_k": 8}],
        "fusion": [{"name": "rrf", "method": "rrf", "runs": ["bm25", "splade"]},
                   {"name": "wsum", "method": "wsum", "norm": "min-max", "runs": ["bm25", "splade"], "tune": True}],
        "significance": {"baseline": "bm25", "test": "t-test"},
        "efficiency": {"latency_queries": 2, "warmup": 1, "hits": 10},
        **over,
    }
    import yaml

    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_benchmark_table_and_resume(tmp_path, capsys):
    path = _config(tmp_path)
    assert main(["benchmark", path, "--work-dir", str(tmp_path / "work"), "--threads", "1"]) == 0
    table = pd.read_csv(tmp_path / "results" / "table.csv")
    assert list(table["system"]) == ["bm25", "splade", "rrf", "wsum"]
    assert (table["status"] == "ok").all()
    for system in ("bm25", "splade", "rrf", "wsum"):
        metrics = json.loads((tmp_path / "results" / "runs" / system / "tiny" / "metrics.json").read_text())
        row = table[table["system"] == system].iloc[0]
        assert row["nDCG@10"] == pytest.approx(metrics["nDCG@10"], abs=1e-12)
    splade = table[table["system"] == "splade"].iloc[0]
    assert splade["flops"] > 0 and splade["avg_q_dims"] <= 8 and splade["avg_d_dims"] <= 20
    assert splade["latency_p50_ms"] > 0 and table.iloc[0]["latency_p50_ms"] > 0
    assert {"nDCG@10_sig", "baseline"} <= set(table.columns)
    # the console shows the report's table: systems x the benchmark's measures, marks explained in its notes
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next(line for line in lines if line.split()[:1] == ["system"])
    assert header.split()[-3:] == ["nDCG@10", "RR@10", "R@1000"], header
    column = header.split().index("nDCG@10") - len(header.split())   # from the right: fusions have no engine
    shown = {line.split()[0]: line.split()[column] for line in lines[lines.index(header) + 1:] if line.split()[:1]
             and line.split()[0] in ("bm25", "splade", "rrf", "wsum")}
    assert {s: float(v.rstrip("*†↓°")) for s, v in shown.items()} == pytest.approx(
        dict(zip(table["system"], table["nDCG@10"].round(4))), abs=1e-9)
    assert "latency" not in header and "flops" not in header and "NaN" not in out
    assert "paired t-test" in out and "baseline bm25" in out   # the notes name the test, from the manifest
    wsum = json.loads((tmp_path / "results" / "runs" / "wsum" / "tiny" / "manifest.json").read_text())
    assert wsum["tuning"]["counts"] and wsum["tuning"]["params"]["weights"]
    # tuning runs were made on the train split, apart from the reported ones, and runs stay in the work folder
    assert (tmp_path / "work" / "benchmarks" / "tiny" / "runs" / "bm25" / "tiny@train" / "run.trec").exists()
    assert not list((tmp_path / "results").rglob("run.trec"))
    # a second run resumes: every run is reused (its metrics recomputed), the table is the same
    run_file = tmp_path / "work" / "benchmarks" / "tiny" / "runs" / "splade" / "tiny" / "run.trec"
    before = run_file.stat().st_mtime
    assert main(["benchmark", path, "--work-dir", str(tmp_path / "work"), "--threads", "1"]) == 0
    assert run_file.stat().st_mtime == before
    again = pd.read_csv(tmp_path / "results" / "table.csv")
    assert again["nDCG@10"].tolist() == table["nDCG@10"].tolist()


def test_tuning_on_the_reported_split_is_refused(tmp_path):
    path = _config(tmp_path, systems=[{"name": "bm25", "kind": "bm25"}, {"name": "bm25b", "kind": "bm25", "k1": 1.2}],
                   fusion=[{"name": "wsum", "method": "wsum", "runs": ["bm25", "bm25b"], "tune": True}],
                   efficiency=None, significance=None)
    cfg = load_config(path)
    cfg = cfg.__class__(**{**cfg.__dict__, "datasets": (cfg.datasets[0].__class__(
        **{**cfg.datasets[0].__dict__, "tune_split": "test"}),)})
    from lsr_eval.benchmark.run import run_benchmark

    table = run_benchmark(cfg, tmp_path / "work", threads=1)
    status = table[table["system"] == "wsum"].iloc[0]["status"]
    assert status.startswith("failed: ") and "reported" in status, status


def test_config_errors_name_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nout: y\ndatasets: [scifact]\nsystems: [{name: a, kind: bm25, k2: 1}]\n")
    with pytest.raises(ConfigError, match="unknown key 'k2'"):
        load_config(bad)
    bad.write_text("name: x\nout: y\ndatasets: [scifact]\nsystems: [{name: a, kind: splade}]\n")
    with pytest.raises(ConfigError, match="needs 'model'"):
        load_config(bad)
    bad.write_text("name: x\ndatasets: [scifact]\nsystems: []\n")
    with pytest.raises(ConfigError, match="missing required key 'out'"):
        load_config(bad)
    bad.write_text("name: x\nout: y\ndatasets: [scifact]\nsystems: [{name: a, kind: bm25}]\nfusion: "
                   "[{name: f, method: rrf, runs: [a, b]}]\n")
    with pytest.raises(ConfigError, match="unknown systems"):
        load_config(bad)


def test_committed_benchmark_configs_are_valid():
    from pathlib import Path

    for path in sorted(Path(__file__).resolve().parents[2].glob("pipelines/benchmarks/*.yaml")):
        load_config(path)


def test_sweep_reuses_one_encoding_and_costs_every_system(tmp_path):
    path = _config(tmp_path, sweep=[{"system": "splade", "doc_top_k": [2, 5, 20]}, {"system": "splade",
                                                                                      "query_top_k": [2]}],
                   fusion=[{"name": "rrf", "method": "rrf", "runs": ["bm25", "splade"]},
                           {"name": "rrf-d5", "method": "rrf", "runs": ["bm25", "splade-d5"]}],
                   significance=None)
    work = tmp_path / "work"
    assert main(["benchmark", path, "--work-dir", str(work), "--threads", "1"]) == 0
    table = pd.read_csv(tmp_path / "results" / "table.csv").set_index("system")
    assert list(table.index) == ["bm25", "splade", "splade-d2", "splade-d5", "splade-d20", "splade-q2", "rrf",
                                 "rrf-d5"]
    assert (table["status"] == "ok").all()
    assert len(list((work / "encodings").iterdir())) == 1  # one encoding for every point
    assert table.loc["splade-d2", "sweep"] == "splade:doc_top_k" and table.loc["splade-d2", "point"] == "d2"
    assert table.loc["splade-d2", "doc_top_k"] == 2 and table.loc["splade-q2", "query_top_k"] == 2
    assert table.loc["splade-d2", "avg_d_dims"] <= 2 < table.loc["splade", "avg_d_dims"]
    assert table.loc["splade-d5", "postings"] == pytest.approx(table.loc["splade-d5", "avg_d_dims"] * len(TINY_DOCS))
    assert table.loc["splade-q2", "avg_q_dims"] <= 2
    # pruning to the encoding's own cap changes nothing
    assert table.loc["splade-d20", "nDCG@10"] == table.loc["splade", "nDCG@10"]
    assert table.loc["splade-d20", "postings"] == table.loc["splade", "postings"]
    assert table.loc["splade-d2", "flops"] < table.loc["splade-d5", "flops"] <= table.loc["splade", "flops"]
    # BM25 FLOPs over its own index; a fusion costs its parts
    assert table.loc["bm25", "flops"] > 0 and table.loc["bm25", "postings"] > 0
    assert table.loc["rrf", "flops"] == pytest.approx(table.loc["bm25", "flops"] + table.loc["splade", "flops"])
    assert table.loc["rrf-d5", "flops"] == pytest.approx(table.loc["bm25", "flops"] + table.loc["splade-d5", "flops"])
    assert table.loc["rrf", "latency_mean_ms"] == pytest.approx(
        table.loc["bm25", "latency_mean_ms"] + table.loc["splade", "latency_mean_ms"])
    assert table.loc["rrf", "latency_parallel_mean_ms"] >= max(table.loc["bm25", "latency_mean_ms"],
                                                              table.loc["splade", "latency_mean_ms"])
    assert table.loc["rrf", "kind"] == "fusion" and table.loc["bm25", "kind"] == "bm25"
    manifest = json.loads((tmp_path / "results" / "manifest.json").read_text())
    assert "splade-d2" in [s["name"] for s in manifest["config"]["systems"]]
    assert "_latency_samples_ms" not in table.columns


@pytest.mark.parametrize("over, message", [
    ({"fusion": [{"name": "f", "method": "rff", "runs": ["bm25", "splade"]}]}, "unknown fusion method 'rff'.*rrf"),
    ({"fusion": [{"name": "f", "method": "wsum", "norm": "minmax", "runs": ["bm25", "splade"]}]},
     "unknown normalisation 'minmax'.*min-max"),
    ({"fusion": [{"name": "f", "method": "wsum", "runs": ["bm25", "splade"]}]}, "needs one weight per run"),
    ({"fusion": [{"name": "f", "method": "rrf", "runs": ["bm25", "splade"], "metric": "nDCG@x"}]}, "metric"),
    ({"significance": {"baseline": "bm25", "test": "wilcoxon"}},
     "significance: test must be one of t-test, randomisation, got 'wilcoxon'$"),
    ({"significance": {"baseline": "bm25", "measures": ["nDCG@ten"]}}, "significance"),
    ({"sweep": [{"system": "splade", "doc_top_k": [5, 40]}]}, r"doc_top_k \[40\] above the 20 terms"),
    ({"sweep": [{"system": "bm25", "doc_top_k": [5]}]}, "non-splade system 'bm25'; splade systems: splade"),
    ({"sweep": [{"system": "splade", "doc_top_k": [0]}]}, r"sweep\[0\]: doc_top_k must be >= 1, got 0$"),
    ({"sweep": [{"system": "splade", "query_threshold": [-0.1]}]},
     r"sweep\[0\]: query_threshold must be >= 0, got -0.1$"),
    ({"sweep": [{"system": "splade", "doc_top_k": [5, 5]}]}, "repeats a value"),
    ({"sweep": [{"system": "splade"}]}, "nothing to sweep; give one or more of doc_top_k"),
    ({"sweep": [{"system": "splade", "top_k": [5]}]}, "unknown key 'top_k'; allowed: doc_threshold, doc_top_k"),
    ({"efficiency": {"latency_queries": 0}}, "efficiency: latency_queries must be >= 1, got 0$"),
    ({"efficiency": {"latency_datasets": ["nope"]}}, "latency_datasets names 'nope', not a dataset of this benchmark"),
    ({"efficiency": {"latency_datasets": "tiny"}},
     "efficiency: latency_datasets must be a non-empty list of strings, got 'tiny'"),
])
def test_config_is_validated_before_anything_runs(tmp_path, over, message):
    path = _config(tmp_path, **over)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_bad_datasets_measures_and_settings_are_refused(tmp_path):
    path = _config(tmp_path)
    import yaml

    cfg = yaml.safe_load(open(path))
    cases = [
        (lambda c: c["datasets"][0].update(measures=["nDCG@ten"]), "datasets\\[0\\]: measures"),
        (lambda c: c["systems"][1].update(doc_top_k="many"),
         "systems\\[1\\]: doc_top_k must be an integer >= 1 or null, got 'many'$"),
        (lambda c: c["systems"][0].update(b=2), "systems\\[0\\]: b must be in \\[0, 1\\], got 2$"),
        (lambda c: c["systems"][1].update(precision="fp16"), "precision must be one of auto, fp32, bf16, got 'fp16'$"),
        (lambda c: c["systems"][1].update(head_init="zeros"),
         "head_init must be one of auto, identity, random, error, got 'zeros'$"),
        (lambda c: c["datasets"][0].pop("tune_split"), "tune: true needs a tune_split"),
        (lambda c: c["systems"][1].update(engine="lucene"),
         "engine must be one of anserini, pisa, seismic, bmp, qdrant, got 'lucene'$"),
        (lambda c: c["systems"][1].update(engine="pisa", engine_options={"query_cut": 5}),
         "engine 'pisa' has no option 'query_cut'; build options: .*query_algorithm"),
        (lambda c: c["systems"][1].update(engine="pisa", engine_options=[1]),
         "engine_options must be a mapping or null, got \\[1\\]$"),
        (lambda c: c["systems"][1].update(engine="pisa", engine_options={"query_algorithm": "fast"}),
         "query_algorithm"),
        # search knobs are checked at load too, not when an index is first opened
        (lambda c: c["systems"][1].update(engine="seismic", engine_options={"heap_factor": 2.0}),
         "seismic: heap_factor must be in \\(0, 1\\], got 2"),
        (lambda c: c["systems"][1].update(engine_options={"max_clauses": 0}),
         "max_clauses must be >= 1, got 0"),
    ]
    for change, message in cases:
        c = json.loads(json.dumps(cfg))
        change(c)
        bad = tmp_path / "bad.yaml"
        bad.write_text(yaml.safe_dump(c))
        with pytest.raises(ConfigError, match=message):
            load_config(bad)


def test_missing_model_folder_is_refused_before_any_run(tmp_path):
    from lsr_eval.benchmark.config import check_on_disk

    path = _config(tmp_path, systems=[{"name": "bm25", "kind": "bm25"},
                                      {"name": "s", "kind": "splade", "model": "work/train/nothing/model"}],
                   fusion=None, significance=None)
    cfg = load_config(path)  # a folder a training step may still write: valid as a config
    with pytest.raises(ConfigError, match="'work/train/nothing/model' is not a folder here.*splade-tiny"):
        check_on_disk(cfg)
    assert main(["benchmark", path, "--work-dir", str(tmp_path / "work")]) != 0
    assert not (tmp_path / "work" / "benchmarks").exists()  # nothing ran


def test_latency_rounds_interleave_systems_and_keep_each_querys_fastest_time(monkeypatch):
    from types import SimpleNamespace

    import lsr_eval.benchmark.run as run

    times = {"a": [[3.0, 1.0], [2.0, 5.0], [4.0, 0.5]], "b": [[10.0, 10.0], [8.0, 12.0], [9.0, 9.0]]}
    order = []

    firsts = []

    def fake(system, dataset, run_dir, cfg, models, work, first=True):
        order.append(system)
        firsts.append(first)
        return {"samples_ms": {"total": times[system][sum(s == system for s in order) - 1]}}

    monkeypatch.setattr(run, "_latency", fake)
    cfg = SimpleNamespace(rounds=3, timed_passes=None)
    out = run._measure_latencies({"a": ("a", None), "b": ("b", None)}, None, cfg, {}, None)
    assert order == ["a", "b", "b", "a", "a", "b"]  # each round starts one system later
    assert firsts == [True, True, False, False, False, False]  # one-off costs (encoder GFLOP) in round one only
    assert out["a"]["samples_ms"]["total"] == [2.0, 0.5] and out["b"]["samples_ms"]["total"] == [8.0, 9.0]
    assert out["a"]["rounds"] == 3 and out["a"]["per_query"] == "fastest over the rounds"
    columns, record = run._latency_columns(out["b"])
    assert columns["latency_mean_ms"] == 8.5 and record["latency_ms"]["total"]["max_ms"] == 9.0


def test_latency_rounds_and_sweep_points_share_one_loaded_model(monkeypatch):
    """A model is loaded once for all latency rounds and for sweep points that differ only after encoding
    (export pruning, engine, hits); a different query budget is another model."""
    import lsr_eval.benchmark.run as run
    import lsr_eval.pipeline.splade as splade

    loads = []
    monkeypatch.setattr(run, "load_model", lambda s, dataset=None, work=None: loads.append(s) or object())
    models: dict = {}
    base = splade.SpladeSettings.from_flat(model="m")
    first = run._model_for(base, models)
    for s in (base, base.replace(prune_doc_top_k=8, hits=10, engine="pisa")):
        assert run._model_for(s, models) is first
    assert run._model_for(base.replace(query_top_k=4), models) is not first
    assert len(loads) == 2


def test_benchmark_engines_side_by_side_with_exact_recall(tmp_path):
    """The same SPLADE system on Anserini, PISA and Seismic: exact engines give the same run; the approximate one
    gets its recall of the exact top-k as columns (exhaustive knobs here: 1.0), also when its run is reused."""
    if not os.environ.get("CI"):  # CI installs the engines (the test extras)
        pytest.importorskip("pyterrier_pisa")
        pytest.importorskip("seismic")
    splade = {"kind": "splade", "model": str(tiny_bert()), "max_length_d": 32, "max_length_q": 16, "doc_top_k": 20,
              "query_top_k": 8}
    systems = [{"name": "anserini", **splade}, {"name": "pisa", **splade, "engine": "pisa"},
               {"name": "seismic", **splade, "engine": "seismic",
                "engine_options": {"summary_energy": 1.0, "query_cut": 100, "heap_factor": 0.01}}]
    path = _config(tmp_path, systems=systems, fusion=[], significance=None,
                   efficiency={"latency_queries": 2, "warmup": 1, "hits": 10})
    for attempt in range(2):  # the second run reuses every run
        assert main(["benchmark", path, "--work-dir", str(tmp_path / "work"), "--threads", "1"]) == 0
        table = pd.read_csv(tmp_path / "results" / "table.csv").set_index("system")
        assert (table["status"] == "ok").all()
        assert table["engine"].to_dict() == {"anserini": "anserini", "pisa": "pisa", "seismic": "seismic"}
        assert table.loc["seismic", "exact_recall@10"] == 1.0 and table.loc["seismic", "exact_recall@1000"] == 1.0
        assert pd.isna(table.loc["pisa", "exact_recall@10"])
        assert table["nDCG@10"].nunique() == 1
        assert (table["latency_p50_ms"] > 0).all()
    from lsr_eval.runs.trec import read_run

    runs = {s: read_run(tmp_path / "work" / "benchmarks" / "tiny" / "runs" / s / "tiny" / "run.trec")
            for s in ("anserini", "pisa")}
    assert runs["anserini"] == runs["pisa"]


def test_latency_ratios_to_the_same_engines_bm25_and_query_encoder_gflop(tmp_path):
    """Every latency is also a ratio to the BM25 measured in the same run on the same engine (BM25 on PISA for the
    PISA rows, with naver's protocol: block_max_wand over fixed-40 block-max data), and a SPLADE row carries its
    query encoder's GFLOP per query (counted, the same for any CPU)."""
    if not os.environ.get("CI"):
        pytest.importorskip("pyterrier_pisa")
    pisa = {"engine": "pisa", "engine_options": {"query_algorithm": "block_max_wand", "block_size": 40}}
    splade = {"kind": "splade", "model": str(tiny_bert()), "max_length_d": 32, "max_length_q": 16, "doc_top_k": 20,
              "query_top_k": 8}
    systems = [{"name": "bm25", "kind": "bm25"}, {"name": "bm25-pisa", "kind": "bm25", **pisa},
               {"name": "splade", **splade}, {"name": "splade-pisa", **splade, **pisa}]
    path = _config(tmp_path, systems=systems, fusion=[], significance=None,
                   efficiency={"latency_queries": 2, "warmup": 1, "hits": 10})
    assert main(["benchmark", path, "--work-dir", str(tmp_path / "work"), "--threads", "1"]) == 0
    table = pd.read_csv(tmp_path / "results" / "table.csv").set_index("system")
    assert (table["status"] == "ok").all()
    assert table["latency_reference"].to_dict() == {"bm25": "bm25", "bm25-pisa": "bm25-pisa", "splade": "bm25",
                                                    "splade-pisa": "bm25-pisa"}
    for name, ref in (("splade", "bm25"), ("splade-pisa", "bm25-pisa")):
        assert table.loc[name, "latency_ratio_bm25"] == pytest.approx(
            table.loc[name, "latency_mean_ms"] / table.loc[ref, "latency_mean_ms"])
    assert table.loc["bm25", "latency_ratio_bm25"] == table.loc["bm25-pisa", "latency_ratio_bm25"] == 1.0
    # BM25 on PISA splits query analysis from search, as SPLADE splits encoding from search
    assert table.loc["splade-pisa", "latency_search_ratio_bm25"] == pytest.approx(
        table.loc["splade-pisa", "latency_search_mean_ms"] / table.loc["bm25-pisa", "latency_search_mean_ms"])
    runs = tmp_path / "work" / "benchmarks" / "tiny" / "runs"
    record = json.loads((runs / "splade-pisa" / "tiny" / "efficiency.json").read_text())["latency"]
    assert record["bm25_reference"]["latency_reference"] == "bm25-pisa"
    gflop = record["query_encoder"]["gflop_per_query"]
    assert gflop > 0 and table.loc["splade", "query_encoder_gflop"] == table.loc["splade-pisa", "query_encoder_gflop"]
    assert table.loc["splade", "query_encoder_gflop"] == pytest.approx(gflop)
    assert pd.isna(table.loc["bm25", "query_encoder_gflop"])
    search = json.loads((runs / "splade-pisa" / "tiny" / "manifest.json").read_text())["search"]
    assert (search["query_algorithm"], search["block_max_data"]) == ("block_max_wand", "quantized.q0.bmw.40")
    bm25_search = json.loads((runs / "bm25-pisa" / "tiny" / "manifest.json").read_text())["search"]
    assert (bm25_search["scorer"], bm25_search["block_max_data"]) == ("bm25", "bm25.k1-0.9.b-0.4.q0.bmw.40")


def test_latency_is_timed_only_on_the_datasets_asked_for(tmp_path):
    """``efficiency.latency_datasets``: the listed dataset's rows have latency, the other's FLOPs only (no latency
    cell, no failure)."""
    import yaml

    path = _config(tmp_path, fusion=[], significance=None)
    cfg = yaml.safe_load(open(path))
    cfg["datasets"].append({**cfg["datasets"][0], "label": "tiny-untimed"})
    cfg["efficiency"]["latency_datasets"] = ["tiny"]
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    assert main(["benchmark", path, "--work-dir", str(tmp_path / "work"), "--threads", "1"]) == 0
    table = pd.read_csv(tmp_path / "results" / "table.csv")
    assert (table["status"] == "ok").all()
    timed, untimed = (table[table["dataset"] == d].set_index("system") for d in ("tiny", "tiny-untimed"))
    assert (timed["latency_p50_ms"] > 0).all() and untimed["latency_p50_ms"].isna().all()
    assert (untimed.loc["splade", "flops"] > 0) and untimed.loc["splade", "flops"] == timed.loc["splade", "flops"]
    record = json.loads((tmp_path / "work" / "benchmarks" / "tiny" / "runs" / "splade" / "tiny-untimed" /
                         "efficiency.json").read_text())
    assert "flops" in record and "latency" not in record
