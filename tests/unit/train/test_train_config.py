"""Training configs: unknown keys, missing values, wrong types and bad choices fail on load, naming the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from lsr_eval.cli import main
from lsr_eval.errors import ConfigError
from lsr_eval.train.config import (
    MiddleTrainConfig,
    SpladeTrainConfig,
    load_config,
    load_configs,
    read_yaml,
    result_keys,
)

MINIMAL = {
    "model": {"path": "minilm"},
    "data": {"dataset": "some/beir/folder"},
    "train": {"steps": 10, "batch_size": 4},
    "output": {"dir": "results/train/x", "model_dir": "work/train/x"},
}


def write(tmp_path: Path, data: dict, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def with_(base: dict, section: str, **values) -> dict:
    out = {k: dict(v) for k, v in base.items()}
    out.setdefault(section, {}).update(values)
    return out


def test_minimal_config_gets_defaults(tmp_path):
    cfg = load_config(write(tmp_path, MINIMAL))
    assert isinstance(cfg, SpladeTrainConfig)
    assert cfg.loss.name == "infonce" and cfg.loss.in_batch
    assert cfg.regularizer.document == "flops" and cfg.regularizer.lambda_d == 0.0
    assert cfg.train.grad_accum == 1 and cfg.train.bf16 is None and cfg.optim.lr == 2e-5  # None: the auto rule


@pytest.mark.parametrize("data, key", [
    (with_(MINIMAL, "model", rescale=4), "model.rescale"),
    (with_(MINIMAL, "train", step=4), "train.step"),
    ({**MINIMAL, "trainer": {}}, "trainer"),
])
def test_unknown_key_is_named(tmp_path, data, key):
    with pytest.raises(ConfigError, match=rf"c.yaml: unknown key '{key}'; allowed: "):
        load_config(write(tmp_path, data))


@pytest.mark.parametrize("section, key", [("model", "path"), ("train", "batch_size"), ("output", "model_dir")])
def test_missing_required_value_is_named(tmp_path, section, key):
    data = {k: dict(v) for k, v in MINIMAL.items()}
    del data[section][key]
    with pytest.raises(ConfigError, match=rf"c.yaml: missing required key '{section}.{key}'$"):
        load_config(write(tmp_path, data))


def test_missing_section_is_named(tmp_path):
    data = {k: v for k, v in MINIMAL.items() if k != "train"}
    with pytest.raises(ConfigError, match="c.yaml: missing required key 'train'$"):
        load_config(write(tmp_path, data))


@pytest.mark.parametrize("section, values, message", [
    ("train", {"steps": "ten"}, r"c.yaml: train.steps must be an integer >= 1, got 'ten'$"),
    ("train", {"bf16": "yes"}, r"train.bf16 must be true, false or null, got 'yes'$"),
    ("loss", {"name": "hinge"}, r"loss.name must be one of infonce, margin_mse, kl_div, got 'hinge'$"),
    ("regularizer", {"query": "l2"}, r"regularizer.query must be one of none, l1, flops, got 'l2'$"),
    ("model", {"rescale_k": "big"}, r"model.rescale_k must be a number > 0, 'suggested' or null, got 'big'$"),
    ("model", {"rescale_k": -2}, r"model.rescale_k must be > 0, got -2$"),
    ("model", {"tied_input": "both"}, r"model.tied_input must be one of divided, compensated, got 'both'$"),
    ("model", {"trust_remote_code": "maybe"}, r"model.trust_remote_code must be true or false, got 'maybe'$"),
    ("train", {"batch_size": 0}, r"train.batch_size must be >= 1, got 0$"),
    ("loss", {"name": "kl_div"}, r"set data.teacher_scores"),
    ("data", {"source": "irds-triples", "n_negatives": 2}, r"data.n_negatives=2: triples have exactly one"),
])
def test_bad_values_are_named(tmp_path, section, values, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, with_(MINIMAL, section, **values)))


def test_yaml11_float_strings_and_suggested_k(tmp_path):
    cfg = load_config(write(tmp_path, with_(with_(MINIMAL, "regularizer", lambda_d="5e-3"), "model",
                                            rescale_k="suggested")))
    assert cfg.regularizer.lambda_d == 0.005
    assert cfg.model.rescale_k == "suggested"


def test_base_and_overrides_merge_key_by_key(tmp_path):
    write(tmp_path, MINIMAL, "base.yaml")
    child = write(tmp_path, {"base": "base.yaml", "train": {"steps": 99}, "model": {"rescale_k": 16}})
    cfg = load_config(child, ["train.batch_size=2", "model.query.build.layers=3", "data.n_negatives=0"])
    assert (cfg.train.steps, cfg.train.batch_size) == (99, 2)           # child and override win, rest kept
    assert cfg.model.path == "minilm" and cfg.model.rescale_k == 16.0
    assert cfg.model.query.build.layers == 3 and cfg.model.query.build.hidden == 128
    with pytest.raises(ConfigError, match="unknown key 'train.stepz'"):
        load_config(child, ["train.stepz=1"])
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        load_config(child, ["train.steps"])


def test_query_encoder_needs_exactly_one_source(tmp_path):
    with pytest.raises(ConfigError, match="exactly one of 'path'"):
        load_config(write(tmp_path, with_(MINIMAL, "model", query={"head_init": "auto"})))
    with pytest.raises(ConfigError, match="hidden=100 is not divisible by heads=3"):
        load_config(write(tmp_path, with_(MINIMAL, "model", query={"build": {"hidden": 100, "heads": 3}})))


def test_resume_key_ignores_output_and_logging():
    a = {"train": {"steps": 3, "log_every": 1}, "output": {"dir": "x"}}
    b = {"train": {"steps": 3, "log_every": 5}, "output": {"dir": "y"}}
    assert result_keys(a) == result_keys(b) == {"train.steps": 3}


def test_cli_reports_config_errors_before_training(tmp_path, capsys):
    bad = write(tmp_path, with_(MINIMAL, "optim", learning_rate=1e-4))
    assert main(["train", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lsr-eval train: error:") and "unknown key 'optim.learning_rate'" in err
    assert main(["train", str(write(tmp_path, MINIMAL)), "--set", "train.steps=5", "--check"]) == 0
    assert "steps: 5" in capsys.readouterr().out


def test_shipped_configs_validate():
    folder = REPO / "pipelines" / "train"
    names = sorted(p.name for p in folder.glob("*.yaml") if not p.name.endswith("base.yaml"))
    assert len(names) >= 35 + 6 + 2 + 2
    for name in names:
        raw = read_yaml(folder / name)
        cls = MiddleTrainConfig if "mlm" in raw else SpladeTrainConfig   # middle training
        configs = load_configs(folder / name, cls=cls)
        tails = [f"-s{s}" for s in raw["seeds"]] if "seeds" in raw else [""]
        assert [c.name for c in configs] == [name[:-len(".yaml")] + t for t in tails]
        for cfg in configs:
            assert cfg.output.dir == f"results/train/{cfg.name}" or name == "scifact-minilm-rescale.yaml"
    v_small = load_config(folder / "efficient-splade-V-small.yaml")
    assert (v_small.regularizer.query, v_small.regularizer.lambda_q) == ("l1", 5e-3)
    assert (v_small.regularizer.document, v_small.regularizer.lambda_d) == ("flops", 5e-3)
    assert v_small.loss.name == "kl_div" and v_small.train.steps == 250000
    gte = [load_config(folder / f"rescale-gte-en-mlm-base-k{k}.yaml") for k in (1, 2, 4, 8, 16)]
    assert all(c.model.trust_remote_code for c in gte)             # the checkpoint ships its own model code
    assert not load_config(folder / "rescale-bert-base-uncased-k1.yaml").model.trust_remote_code
    bt_large = load_config(folder / "efficient-splade-VI-BT-large.yaml")
    assert (bt_large.regularizer.lambda_q, bt_large.regularizer.lambda_d) == (5e-4, 5e-4)
    # BT-SPLADE's query encoder: pretrained BERT-tiny, middle-trained (no random build in a paper config)
    assert bt_large.model.query.build is None
    assert bt_large.model.query.path == "work/train/middle-bert-tiny-msmarco/model"


def test_training_commands_do_not_import_torch_when_loaded():
    code = ("import sys, argparse, lsr_eval.commands.train as t, lsr_eval.commands.middle_train as m; "
            "t.add_arguments(argparse.ArgumentParser()); m.add_arguments(argparse.ArgumentParser()); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_seeds_fan_out_into_one_run_per_seed(tmp_path):
    path = write(tmp_path, {**MINIMAL, "name": "x", "seeds": [1, 2, 3]})
    configs = load_configs(path)
    assert [c.train.seed for c in configs] == [1, 2, 3]
    assert [c.name for c in configs] == ["x-s1", "x-s2", "x-s3"]
    assert [c.output.dir for c in configs] == ["results/train/x-s1", "results/train/x-s2", "results/train/x-s3"]
    assert [c.output.model_dir for c in configs] == ["work/train/x-s1", "work/train/x-s2", "work/train/x-s3"]
    assert all(c.train.steps == 10 for c in configs)            # everything else is the config's
    with pytest.raises(ConfigError, match="lists 3 seeds"):
        load_config(path)                                       # one run asked, three given
    one = load_config(path, ["seeds=[2]"])                       # --set seeds=[2]: that seed's run only
    assert (one.name, one.train.seed, one.output.dir) == ("x-s2", 2, "results/train/x-s2")


def test_a_single_seed_is_unchanged(tmp_path):
    (cfg,) = load_configs(write(tmp_path, {**with_(MINIMAL, "train", seed=7), "name": "x"}))
    assert (cfg.name, cfg.train.seed, cfg.output.dir, cfg.output.model_dir) == \
        ("x", 7, "results/train/x", "work/train/x")


@pytest.mark.parametrize("seeds, message", [
    ([], "seeds must be a non-empty list of integers"), ([1, "2"], "seeds must be a non-empty list of integers"),
    ([1, 1], "'seeds'.*listed twice"), (3, "seeds must be a non-empty list of integers"),
    ([True], "seeds must be a non-empty list of integers"), ([-1], r"seeds\[0\] must be >= 0, got -1"),
])
def test_bad_seeds_are_named(tmp_path, seeds, message):
    with pytest.raises(ConfigError, match=rf"c.yaml: {message}"):
        load_configs(write(tmp_path, {**MINIMAL, "seeds": seeds}))


def test_train_check_prints_every_seed(tmp_path, capsys):
    assert main(["train", str(write(tmp_path, {**MINIMAL, "name": "x", "seeds": [4, 5]})), "--check"]) == 0
    printed = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [(d["name"], d["train"]["seed"]) for d in printed] == [("x-s4", 4), ("x-s5", 5)]


#: The efficient SPLADE configs whose naver/splade originals list FLOPS (documents) before L1 (queries).
NAVER_SUM_CONFIGS = sorted(f"efficient-splade-{kind}-{size}.yaml" for kind in ("V", "VI-BT")
                           for size in ("small", "medium", "large"))


def test_naver_sum_is_set_by_the_six_v_and_vi_bt_configs_and_by_no_other(capsys):
    folder = REPO / "pipelines" / "train"
    found = []
    for path in sorted(folder.glob("*.yaml")):
        if path.name.endswith("base.yaml") or "mlm" in read_yaml(path):
            continue
        if any(c.regularizer.naver_sum for c in load_configs(path)):
            found.append(path.name)
    assert found == NAVER_SUM_CONFIGS
    for name in NAVER_SUM_CONFIGS:     # `lsr-eval train CONFIG --check` shows the sum and the effective weight
        cfg = load_config(folder / name)
        assert main(["train", str(folder / name), "--check"]) == 0
        out = capsys.readouterr().out
        assert yaml.safe_load(out)["regularizer"]["naver_sum"] is True
        assert (f"effective lambda_d {2 * cfg.regularizer.lambda_d:g} = 2 x {cfg.regularizer.lambda_d:g}"
                in out.splitlines()[-1])
    assert main(["train", str(folder / "efficient-splade-VI-doc-small.yaml"), "--check"]) == 0
    out = capsys.readouterr().out
    assert yaml.safe_load(out)["regularizer"]["naver_sum"] is False and "effective lambda_d" not in out


def test_naver_sum_weights_and_refusal(tmp_path):
    cfg = load_config(write(tmp_path, with_(MINIMAL, "regularizer", lambda_d=5e-4, naver_sum=True)))
    assert (cfg.regularizer.doc_count, cfg.regularizer.effective_lambda_d) == (2, 1e-3)
    plain = load_config(write(tmp_path, with_(MINIMAL, "regularizer", lambda_d=5e-4)))
    assert (plain.regularizer.doc_count, plain.regularizer.effective_lambda_d) == (1, 5e-4)
    with pytest.raises(ConfigError, match="naver_sum=true with regularizer.query=none.*remove naver_sum"):
        load_config(write(tmp_path, with_(MINIMAL, "regularizer", query="none", naver_sum=True)))
    with pytest.raises(ConfigError, match="regularizer.naver_sum must be true or false, got 'yes'"):
        load_config(write(tmp_path, with_(MINIMAL, "regularizer", naver_sum="yes")))


def test_naver_sum_off_keeps_every_earlier_identity(tmp_path):
    """An added key at its default leaves a run's identity as it was before the key existed (committed runs,
    resume, grids); set, it is another experiment."""
    before = load_config(write(tmp_path, MINIMAL)).to_dict()
    assert "regularizer.naver_sum" not in result_keys(before)
    older = {k: v for k, v in before.items()}
    older["regularizer"] = {k: v for k, v in before["regularizer"].items() if k != "naver_sum"}
    assert result_keys(older) == result_keys(before)
    on = load_config(write(tmp_path, with_(MINIMAL, "regularizer", naver_sum=True))).to_dict()
    assert result_keys(on)["regularizer.naver_sum"] is True and result_keys(on) != result_keys(before)


def test_middle_from_is_named_validated_and_new_to_identities(tmp_path):
    cfg = load_config(write(tmp_path, with_(MINIMAL, "model", middle_from="ours")))
    assert cfg.model.middle_from == "ours" and result_keys(cfg.to_dict())["model.middle_from"] == "ours"
    assert "model.middle_from" not in result_keys(load_config(write(tmp_path, MINIMAL)).to_dict())
    with pytest.raises(ConfigError, match="model.middle_from must be one of naver, ours, got 'mine'"):
        load_config(write(tmp_path, with_(MINIMAL, "model", middle_from="mine")))
