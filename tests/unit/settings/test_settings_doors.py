"""One wrong value reads the same through every door: a benchmark YAML, a training YAML, the command line, the Python
API and a manifest replayed. Each door raises the settings module's own error (its traceback starts in
``lsr_eval/settings``), the message one line ending ``<name> must be <constraint>, got <value>``; the file or option
and a YAML section's dotted name go in front."""

from __future__ import annotations

import copy
import json
import traceback
from pathlib import Path

import pytest
import yaml

import lsr_eval
from lsr_eval import cli
from lsr_eval.benchmark.config import load_config as load_benchmark
from lsr_eval.pipeline.bm25 import Bm25Settings
from lsr_eval.pipeline.settings import EncodeOptions, LoadOptions, SearchOptions, SpladeSettings
from lsr_eval.reproduce.jobs import Options
from lsr_eval.reproduce.stage import _rerun
from lsr_eval.settings import SettingError
from lsr_eval.train.config import load_config as load_training

SETTINGS = Path(lsr_eval.__file__).parent / "settings" / "__init__.py"

#: value -> (the message's end, the system kind it belongs to, its training-YAML key or None, the command-line
#: options that give it, the API call that takes it)
CASES = {
    "rescale_k 0": ("rescale_k must be > 0, got 0", "splade", ("model", "rescale_k", 0),
                    ["--rescale-k", "0"], lambda: LoadOptions(rescale_k=0), {"rescale_k": 0}),
    "k1 -1": ("k1 must be >= 0, got -1", "bm25", None, ["--k1", "-1"], lambda: lsr_eval.bm25("x", k1=-1),
              {"k1": -1}),
    "b 1.5": ("b must be in [0, 1], got 1.5", "bm25", None, ["--b", "1.5"], lambda: Bm25Settings(b=1.5),
              {"b": 1.5}),
    "precision fp8": ("precision must be one of auto, fp32, bf16, got 'fp8'", "splade", None,
                      ["--precision", "fp8"], lambda: LoadOptions(precision="fp8"), {"precision": "fp8"}),
    "engine nope": ("engine must be one of anserini, pisa, seismic, bmp, qdrant, got 'nope'", "splade", None,
                    ["--engine", "nope"], lambda: SearchOptions(engine="nope"), {"engine": "nope"}),
    "batch size -1": ("batch_size must be >= 1, got -1", "splade", ("train", "batch_size", -1),
                      ["--batch-size", "-1"], lambda: EncodeOptions(batch_size=-1), {"batch_size": -1}),
}
#: A training config that loads (tests/unit/train/test_train_config.py's MINIMAL).
TRAINING = {"model": {"path": "minilm"}, "data": {"dataset": "some/beir/folder"},
            "train": {"steps": 10, "batch_size": 4}, "output": {"dir": "results/train/x", "model_dir": "work/train/x"}}
#: A committed run of each kind, whose recorded experiment is replayed with the wrong value in it.
RECORDED = {"splade": {"model": "m", "max_length_q": 64, "max_length_d": 128, "doc_top_k": 256, "query_top_k": 64,
                       "precision": "fp32", "batch_size": 32, "scale": 100.0, "hits": 1000, "engine": "anserini"},
            "bm25": {"k1": 0.9, "b": 0.4, "hits": 1000, "remove_query": True, "method": "bm25-flat"}}


def assert_said(error: BaseException, end: str, traced: bool = True) -> None:
    """``error`` is the settings module's, one line, ending with ``end`` after a place (or nothing) in front."""
    message = str(error)
    assert isinstance(error, SettingError), f"{type(error).__name__}: {message}"
    assert "\n" not in message and message.endswith(end), message
    head = message[:-len(end)]
    assert head == "" or head.endswith((": ", ".")), message
    if traced:   # raised where the value was checked, whatever caught it and said where
        assert Path(traceback.extract_tb(error.__traceback__)[-1].filename) == SETTINGS


@pytest.mark.parametrize("case", CASES)
def test_benchmark_yaml(tmp_path, case):
    end, kind, _, _, _, given = CASES[case]
    system = {"name": "s", "kind": kind, **({"model": "splade-tiny"} if kind == "splade" else {}), **given}
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "b", "out": str(tmp_path / "out"), "datasets": [str(tmp_path)],
                                    "systems": [system]}))
    with pytest.raises(SettingError) as caught:
        load_benchmark(path)
    assert_said(caught.value, end)
    assert str(caught.value).startswith(f"{path}: systems[0]: ")


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][2]])
def test_training_yaml(tmp_path, case):
    end, _, (section, key, value), _, _, _ = CASES[case]
    config = copy.deepcopy(TRAINING)
    config[section][key] = value
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(SettingError) as caught:
        load_training(path)
    assert_said(caught.value, end)
    assert str(caught.value).startswith(f"{path}: {section}.{key} must be ")


@pytest.mark.parametrize("case", CASES)
def test_command_line(tmp_path, tiny_beir, capsys, case):
    end, kind, _, options, _, _ = CASES[case]
    argv = ([kind, str(tiny_beir)] if kind == "bm25" else [kind, "splade-tiny", str(tiny_beir)]) + options
    assert cli.main(argv + ["--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work")]) == 2
    err = capsys.readouterr().err
    assert err == f"lsr-eval {kind}: error: {end}\n", err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", CASES)
def test_python_api(case):
    end, _, _, _, call, _ = CASES[case]
    with pytest.raises(SettingError) as caught:
        call()
    assert_said(caught.value, end)
    assert str(caught.value) == end


@pytest.mark.parametrize("case", CASES)
def test_manifest_replay(tmp_path, case):
    end, kind, _, _, _, given = CASES[case]
    recorded = {**RECORDED[kind], **given}
    manifest = {"stage": kind, "experiment": recorded if kind == "bm25" else {"method": "splade", "settings": recorded}}
    rerun = _rerun(json.loads(json.dumps(manifest)), None, "m" if kind == "splade" else None, Options())
    with pytest.raises(SettingError) as caught:
        rerun(tmp_path / "out", tmp_path / "work")
    assert_said(caught.value, end)


def test_a_manifest_with_good_values_replays_into_the_same_settings():
    """The negative case of the replay door: the records above, unchanged, are accepted."""
    assert Bm25Settings.from_record(RECORDED["bm25"]) == Bm25Settings(remove_query=True)
    assert SpladeSettings.from_record(RECORDED["splade"]).encode.batch_size == 32
