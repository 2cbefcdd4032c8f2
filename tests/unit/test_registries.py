"""Adding an engine or a loss is one new module plus one registry line: a fake one, registered in a test and nowhere
else, is found by every check and listing that names engines or losses. And every registered engine's package is
in the ``engines`` extra and pinned in ``constraints.txt``."""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from lsr_eval.benchmark.config import load_config as load_benchmark
from lsr_eval.engines import registry
from lsr_eval.engines.registry import EngineSpec
from lsr_eval.export.collection import UINT32
from lsr_eval.reproduce import machine
from lsr_eval.settings import SettingError
from lsr_eval.train import losses
from lsr_eval.train.config import load_config as load_training
from lsr_eval.train.losses import LossSpec

REPO = Path(__file__).resolve().parents[2]

FAKE_ENGINE = '''
class FakeEngine:
    """An engine with one build setting and one search knob."""
    name = "fake"

    def __init__(self, depth: int = 1):
        if depth < 1:
            raise ValueError("depth")
        self.depth = depth

    def open(self, index, width: int = 2):
        raise NotImplementedError

    def check_search(self, width: int = 2):
        return {"width": width}
'''
FAKE_LOSS = '''
import torch
from lsr_eval.train.losses.base import RankingLoss


class Hinge(RankingLoss):
    def __call__(self, wq, wd, examples, rank=0):
        b = len(examples)
        own = wd.view(wd.shape[0] // b, b, -1)
        return {"rank": torch.relu(1 - (wq * own[0]).sum(-1) + (wq * own[1]).sum(-1)).mean()}
'''


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """A fake engine and a fake loss, each one module, each registered with one line."""
    (tmp_path / "fake_engine.py").write_text(FAKE_ENGINE)
    (tmp_path / "fake_loss.py").write_text(FAKE_LOSS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.ENGINES, "fake", EngineSpec("fake_engine", "FakeEngine", "fake-engine==1.0",
                                                             "a fake engine", UINT32))
    monkeypatch.setitem(losses.LOSSES, "hinge", LossSpec("fake_loss", "Hinge"))
    yield tmp_path
    for name in ("fake_engine", "fake_loss"):
        sys.modules.pop(name, None)


def _bench(tmp_path: Path, **system) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "b", "out": str(tmp_path / "out"), "datasets": [str(tmp_path)],
                                    "systems": [{"name": "s", "kind": "splade", "model": "splade-tiny", **system}]}))
    return path


def test_a_fake_engine_is_found_everywhere_engines_are(plugins):
    from lsr_eval.commands._engine_args import add_engine_arguments

    p = argparse.ArgumentParser()
    add_engine_arguments(p)
    (engine,) = [a for a in p._actions if a.dest == "engine"]
    assert "fake: a fake engine" in engine.help and "one of anserini, pisa, seismic, bmp, qdrant, fake" in engine.help
    assert "fake-engine" in machine.recorded_packages()
    load_benchmark(_bench(plugins, engine="fake", engine_options={"depth": 3, "width": 4}))   # accepted
    with pytest.raises(Exception, match="engine 'fake' has no option 'height'; build options: depth; search "
                                        "options: width"):
        load_benchmark(_bench(plugins, engine="fake", engine_options={"height": 1}))


def test_without_its_line_the_fake_engine_is_refused(tmp_path):
    with pytest.raises(SettingError, match="engine must be one of anserini, pisa, seismic, bmp, qdrant, got 'fake'$"):
        load_benchmark(_bench(tmp_path, engine="fake"))
    assert "fake-engine" not in machine.recorded_packages()


def _training(tmp_path: Path, loss: str) -> Path:
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump({"model": {"path": "minilm"}, "data": {"dataset": "some/beir/folder"},
                                    "loss": {"name": loss}, "train": {"steps": 10, "batch_size": 4},
                                    "output": {"dir": "results/train/x", "model_dir": "work/train/x"}}))
    return path


def test_a_fake_loss_is_found_by_the_config_the_settings_page_and_the_objective(plugins):
    import torch

    from lsr_eval.commands import settings as settings_command
    from lsr_eval.settings.docs import markdown
    from lsr_eval.train.ranking import objective

    cfg = load_training(_training(plugins, "hinge"))
    assert cfg.loss.name == "hinge"
    page = markdown(settings_command.sections(), "t", "i")
    assert "one of infonce, margin_mse, kl_div, hinge" in page
    examples = [type("E", (), {})() for _ in range(2)]
    wq, wd = torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([[0.5, 0.0], [0.0, 2.0], [0.0, 1.0], [1.0, 0.0]])
    parts = objective(wq, wd, examples, cfg, step=1)
    # hand-computed: positives score 0.5 and 2, negatives 0 and 0: mean(relu(1 - 0.5), relu(1 - 2)) = 0.25, and
    # the regularisers' weights are 0
    assert float(parts["rank"]) == 0.25 and float(parts["loss"]) == 0.25


def test_without_its_line_the_fake_loss_is_refused(tmp_path):
    with pytest.raises(SettingError, match="loss.name must be one of infonce, margin_mse, kl_div, got 'hinge'$"):
        load_training(_training(tmp_path, "hinge"))


def test_every_registered_engine_package_is_in_the_engines_extra_and_pinned():
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["engines"]
    pins = dict(line.split("==") for line in (REPO / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    for name, spec in registry.ENGINES.items():
        if spec.package is None:
            continue
        dist, version = spec.package.split("==")
        assert any(re.split(r"[<>=!~ ]", r, maxsplit=1)[0] == dist for r in extra), (name, extra)
        assert pins.get(dist) == version, (name, dist, pins.get(dist))


FAKE_REGULARIZER = '''
def squares(w):
    return (w ** 2).sum(1).mean()
'''


def test_a_fake_regularizer_is_found_by_the_config_and_the_objective(tmp_path, monkeypatch):
    import torch

    from lsr_eval.train import regularizers
    from lsr_eval.train.ranking import objective

    (tmp_path / "fake_regularizer.py").write_text(FAKE_REGULARIZER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(regularizers.REGULARIZERS, "squares", ("fake_regularizer", "squares"))
    path = _training(tmp_path, "infonce")
    data = yaml.safe_load(path.read_text())
    data["regularizer"] = {"query": "squares", "lambda_q": 1.0, "document": "none"}
    data["loss"]["in_batch"] = False
    path.write_text(yaml.safe_dump(data))
    cfg = load_training(path)
    wq, wd = torch.tensor([[1.0, 2.0]]), torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    parts = objective(wq, wd, [type("E", (), {})()], cfg, step=1)
    # hand-computed: the query's squares 1 + 4 = 5, weight 1 (no warm-up): the loss is rank + 5
    assert float(parts["squares_q"]) == 5.0 and float(parts["loss"]) == pytest.approx(float(parts["rank"]) + 5.0)
    sys.modules.pop("fake_regularizer", None)


def test_without_its_line_the_fake_regularizer_is_refused(tmp_path):
    path = _training(tmp_path, "infonce")
    data = yaml.safe_load(path.read_text())
    data["regularizer"] = {"query": "squares"}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SettingError, match="regularizer.query must be one of none, l1, flops, got 'squares'$"):
        load_training(path)
