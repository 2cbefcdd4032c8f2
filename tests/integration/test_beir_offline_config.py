"""The BEIR table's configurations: beir-offline (SciFact and NFCorpus test, available offline) and
paper-beir13 (all of BEIR-13, on a machine with a network) name the same systems and fusions, and the NFCorpus
fine-tune is pre-registered with its test benchmark."""

from __future__ import annotations

from pathlib import Path

from lsr_eval.benchmark.config import load_config
from lsr_eval.benchmark.run import expand_datasets
from lsr_eval.data.registry import GROUPS

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "pipelines" / "benchmarks"
SYSTEMS = ["bm25-flat", "bm25-multifield", "splade-tiny"]
FUSIONS = ["rrf", "wsum-tuned"]


def test_beir_offline_names_its_systems_datasets_and_tune_splits():
    cfg = load_config(BENCH / "beir-offline.yaml")
    assert cfg.out == "results/benchmarks/beir-offline"
    assert [s.name for s in cfg.systems] == SYSTEMS
    by_name = {s.name: s for s in cfg.systems}
    assert by_name["bm25-flat"].params == {}  # Pyserini's flat condition: the defaults
    assert by_name["bm25-multifield"].params == {"fields": ["title", "text"]}
    assert by_name["splade-tiny"].params == {"model": "splade-tiny", "doc_top_k": 1024, "query_top_k": 256,
                                             "precision": "fp32"}
    assert [(f.name, f.method, f.runs, f.tune) for f in cfg.fusion] == [
        ("rrf", "rrf", ("bm25-flat", "splade-tiny"), False),
        ("wsum-tuned", "wsum", ("bm25-flat", "splade-tiny"), True)]
    # test reported, weights tuned on another official split of the same dataset (SciFact has no dev split)
    assert [(d.label, d.split, d.tune_split) for d in cfg.datasets] == [("scifact", "test", "train"),
                                                                        ("nfcorpus", "test", "dev")]
    assert all("R@1000" in d.measures and d.measures[0] == "nDCG@10" for d in cfg.datasets)
    assert cfg.significance.baselines == ("bm25-flat",)


def test_paper_beir13_runs_the_same_systems_on_all_of_beir13():
    offline, paper = load_config(BENCH / "beir-offline.yaml"), load_config(BENCH / "paper-beir13.yaml")
    names = [d.spec for d in expand_datasets(paper.datasets)]
    assert names == list(GROUPS["beir-13"])  # nothing else: the table's mean is the BEIR-13 mean
    # every offline system and fusion, with the same settings (extra rows may follow)
    paper_systems = {s.name: s.params for s in paper.systems}
    assert all(paper_systems[s.name] == s.params for s in offline.systems)
    paper_fusions = {f.name: f for f in paper.fusion}
    assert all(paper_fusions[f.name] == f for f in offline.fusion)
    assert paper.significance == offline.significance
    # tuned on the same splits where the offline table has them
    tune = {d.spec: d.tune_split for d in paper.datasets}
    assert {d.label: d.tune_split for d in offline.datasets} == {k: tune[k] for k in ("scifact", "nfcorpus")}


def test_nfcorpus_finetune_is_preregistered_with_its_benchmark():
    from lsr_eval.train.config import load_config as load_train

    train = load_train(ROOT / "pipelines" / "train" / "nfcorpus-splade-tiny.yaml")
    assert train.data.dataset == "nfcorpus/train" and train.train.bf16 is False
    assert train.output.model_dir == "work/train/nfcorpus-splade-tiny"
    bench = load_config(BENCH / "nfcorpus-splade-tiny-finetuned.yaml")
    [data] = bench.datasets
    assert (data.label, data.split, data.tune_split) == ("nfcorpus", "test", "dev")  # never tuned on test
    model = {s.name: s.params.get("model") for s in bench.systems}
    assert model["splade-tiny-finetuned"] == train.output.model_dir + "/model"
    assert {f.name: f.tune for f in bench.fusion} == {"rrf-finetuned": False, "wsum-finetuned-tuned": True}
    assert bench.significance.baselines == ("bm25",)
