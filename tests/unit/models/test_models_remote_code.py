"""``trust_remote_code``: checkpoints that ship their own model code (e.g. Alibaba-NLP/gte-en-mlm-base)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from tiny_models import tiny_model

from lsr_eval.errors import InputError
from lsr_eval.models.loading import load_mlm

CONFIG_CODE = '''from transformers import BertConfig


class TinyCustomConfig(BertConfig):
    model_type = "tiny-custom"
'''

MODEL_CODE = '''from transformers import BertForMaskedLM

from .configuration_tinycustom import TinyCustomConfig


class TinyCustomForMaskedLM(BertForMaskedLM):
    config_class = TinyCustomConfig
'''


@pytest.fixture()
def custom_code_model(tmp_path, monkeypatch):
    """A tiny BERT re-declared as a model type transformers does not know, with its code in the folder."""
    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "modules"))
    folder = tmp_path / "tiny-custom"
    shutil.copytree(tiny_model("bert"), folder)
    (folder / "configuration_tinycustom.py").write_text(CONFIG_CODE, encoding="utf-8")
    (folder / "modeling_tinycustom.py").write_text(MODEL_CODE, encoding="utf-8")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.update(model_type="tiny-custom", architectures=["TinyCustomForMaskedLM"],
                  auto_map={"AutoConfig": "configuration_tinycustom.TinyCustomConfig",
                            "AutoModelForMaskedLM": "modeling_tinycustom.TinyCustomForMaskedLM"})
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def test_refused_without_the_flag(custom_code_model):
    with pytest.raises(InputError, match="tiny-custom: cannot load"):
        load_mlm(custom_code_model)


def test_loaded_with_the_flag_and_recorded(custom_code_model, tmp_path):
    model, tok, _ = load_mlm(custom_code_model, trust_remote_code=True)
    assert type(model).__name__ == "TinyCustomForMaskedLM"
    assert model.config.lsr_eval["trust_remote_code"] is True
    batch = tok(["aspirin and the heart"], return_tensors="pt")
    with torch.no_grad():
        before = model(**batch).logits
    model.save_pretrained(tmp_path / "saved")
    tok.save_pretrained(tmp_path / "saved")
    again, tok2, _ = load_mlm(tmp_path / "saved")       # no flag: the saved record enables it
    with torch.no_grad():
        torch.testing.assert_close(again(**tok2(["aspirin and the heart"], return_tensors="pt")).logits, before)
