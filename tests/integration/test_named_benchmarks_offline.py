"""Named benchmarks offline: dl19, dl20 and msmarco-dev from the files ``seed-irds`` places in the ir_datasets home,
their official measures (trec_eval parity with ``-l 2`` through pytrec_eval), the six published DL19 runs, one clear
line when the files are absent and there is no network, and BEIR splits by name (nfcorpus dev / train)."""

from __future__ import annotations

import ir_datasets  # noqa: F401  imported with the session's home (conftest) before a test points lsr-eval elsewhere
import pytest
from conftest import shared_path

from lsr_eval.cli import main
from lsr_eval.data.datasets import load_dataset
from lsr_eval.data.irds_cache import seed_cache
from lsr_eval.errors import InputError

#: The published nDCG@10 of the six DL19 runs (Pyserini / RankLLM; ../shared/data/README.md).
PUBLISHED = {"bm25-flat": 0.5058, "bm25-rm3": 0.5216, "splade-pp-ed": 0.7308, "tas-b": 0.7210,
             "openai-ada2": 0.7035, "repllama": 0.7384}


@pytest.fixture
def msmarco_home(tmp_path, monkeypatch):
    """An ir_datasets home seeded from ../shared/data/msmarco-passage (lsr-eval reads the home per call)."""
    home = tmp_path / "irds"
    copied = seed_cache(shared_path("msmarco-passage"), home)
    assert sorted(p.relative_to(home).as_posix() for p in copied) == [
        "msmarco-passage/qrels.dev.small.txt", "msmarco-passage/qrels.dl19-passage.txt",
        "msmarco-passage/qrels.dl20-passage.txt", "msmarco-passage/queries.dev.small.tsv",
        "msmarco-passage/topics.dl19-passage.tsv", "msmarco-passage/topics.dl20.tsv"]  # the runs are not copied
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    return home


@pytest.fixture
def no_network(monkeypatch):
    """Every HTTP request fails as on a machine without a network (so the test never downloads anything)."""
    import requests

    def refuse(*args, **kwargs):
        raise requests.exceptions.ConnectionError("no network in this test")

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", refuse)


def test_dl19_dl20_and_dev_small_resolve_from_the_seeded_files(msmarco_home):
    dl19, dl20, dev = load_dataset("dl19"), load_dataset("dl20"), load_dataset("msmarco-dev")
    assert dl19.measures == ("nDCG@10", "R@1000(rel=2)", "MAP(rel=2)") == dl20.measures
    assert dev.measures == ("RR@10", "R@1000")
    assert (len(dl19.queries()), len(dl19.qrels()), sum(map(len, dl19.qrels().values()))) == (43, 43, 9260)
    # DL20's topics file holds all 200 topics; the judged 54 are kept, as ir_datasets' trec-dl-2020/judged
    assert (len(dl20.queries()), len(dl20.qrels()), sum(map(len, dl20.qrels().values()))) == (54, 54, 11386)
    assert (len(dev.queries()), len(dev.qrels()), sum(map(len, dev.qrels().values()))) == (6980, 6980, 7437)
    described = dl19.describe()["topics_and_qrels"]
    assert described["qrels"]["path"] == str(msmarco_home / "msmarco-passage" / "qrels.dl19-passage.txt")
    assert len(described["qrels"]["sha256"]) == 64


def test_absent_files_without_network_give_one_line_naming_files_and_folder(tmp_path, monkeypatch, no_network,
                                                                            capsys):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "empty"))
    run = shared_path("msmarco-passage", "runs", "dl19.bm25-flat.top100.trec")
    assert main(["evaluate", "dl19", str(run)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "could not download" in err and "topics.dl19-passage.tsv and qrels.dl19-passage.txt" in err
    assert str(tmp_path / "empty" / "msmarco-passage") in err and "seed-irds" in err


def test_published_dl19_runs_reproduce_and_match_trec_eval_with_level_2(msmarco_home):
    from test_evaluation_parity import trec_eval_c

    from lsr_eval.evaluation import evaluate
    from lsr_eval.runs.trec import read_run

    qrels = load_dataset("dl19").qrels()
    for name, published in PUBLISHED.items():
        run = read_run(shared_path("msmarco-passage", "runs", f"dl19.{name}.top100.trec"))
        ours = evaluate(qrels, run, ["nDCG@10", "R@1000(rel=2)", "MAP(rel=2)"])
        assert round(ours["nDCG@10"], 4) == published, name
        for measure, value in ours.items():  # trec_eval -c -l 2 for the binary measures, graded nDCG
            assert value == pytest.approx(trec_eval_c(qrels, run, measure), abs=1e-6), (name, measure)


def test_evaluate_dl19_by_name(msmarco_home, capsys):
    run = shared_path("msmarco-passage", "runs", "dl19.splade-pp-ed.top100.trec")
    assert main(["evaluate", "dl19", str(run)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:4] == ["run", "nDCG@10", "R@1000(rel=2)", "MAP(rel=2)"]
    assert out.splitlines()[2].split()[:2] == ["dl19.splade-pp-ed.top100.trec", "0.7308"]


def test_seed_irds_command_copies_the_known_files(tmp_path, capsys):
    assert main(["seed-irds", str(shared_path("msmarco-passage")), "--home", str(tmp_path / "h")]) == 0
    assert "6 files copied" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "h" / "msmarco-passage").iterdir())[0] == "qrels.dev.small.txt"
    assert not (tmp_path / "h" / "runs").exists()


def test_nfcorpus_dev_and_train_splits_by_name():
    shared_path("ir_datasets", "beir", "nfcorpus", "source.zip")  # seeded by conftest into the session's home
    test, dev, train = load_dataset("nfcorpus"), load_dataset("nfcorpus", "dev"), load_dataset("nfcorpus/train")
    assert (test.name, dev.name, train.name) == ("nfcorpus", "nfcorpus/dev", "nfcorpus/train")
    assert (len(test.queries()), len(dev.queries()), len(train.queries())) == (323, 324, 2590)
    assert dev.irds_id == "beir/nfcorpus/dev" and dev.measures == test.measures and dev.remove_query
    assert dev.corpus_key() == test.corpus_key()  # one corpus: indexes are shared by the splits
    assert not set(dev.qrels()) & set(test.qrels())
    assert load_dataset("nfcorpus/test").name == "nfcorpus"
    with pytest.raises(InputError, match=r"nfcorpus has no split 'devv' \(splits: test, dev, train\)"):
        load_dataset("nfcorpus", "devv")
    with pytest.raises(InputError, match="dl19 has no split 'train'"):
        load_dataset("dl19", "train")
    with pytest.raises(InputError, match="contradicts"):
        load_dataset("nfcorpus/dev", "train")


def test_benchmark_yaml_tunes_on_a_registry_split(tmp_path):
    import yaml

    from lsr_eval.benchmark.config import load_config
    from lsr_eval.errors import ConfigError

    cfg = {"name": "nf", "out": str(tmp_path / "out"),
           "datasets": [{"spec": "nfcorpus", "tune_split": "dev"}],
           "systems": [{"name": "bm25", "kind": "bm25"}, {"name": "b2", "kind": "bm25", "k1": 1.2}],
           "fusion": [{"name": "w", "method": "wsum", "runs": ["bm25", "b2"], "tune": True}]}
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert load_config(path).datasets[0].tune_split == "dev"
    cfg["datasets"][0]["tune_split"] = "validation"
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match=r"datasets\[0\] \(nfcorpus\): nfcorpus has no split 'validation'"):
        load_config(path)


def test_training_data_names_nfcorpus_train():
    from lsr_eval.train.config import DataConfig
    from lsr_eval.train.data import build_query_set

    shared_path("ir_datasets", "beir", "nfcorpus", "source.zip")
    qs = build_query_set(DataConfig(dataset="nfcorpus/train", n_negatives=0), seed=0)
    assert qs.counts["dataset"] == "nfcorpus/train" and qs.counts["queries"] == 2590
    assert qs.counts["corpus_documents_read"] == 3633
