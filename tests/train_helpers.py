"""Shared set-up of the training tests (no tests here): a tiny BEIR training set and a tiny-model config."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import write_beir
from tiny_models import BUILTIN_TEXT, tiny_model


def tiny_beir_train(root: Path) -> tuple[Path, Path]:
    """12 documents, 12 queries (first + last word of their document), one positive each; a negatives file
    listing every other document. Returns (BEIR folder, negatives file)."""
    docs = [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(BUILTIN_TEXT)]
    queries = [{"_id": f"q{i}", "text": f"{t.split()[0]} {t.split()[-1]}"} for i, t in enumerate(BUILTIN_TEXT)]
    qrels = [(f"q{i}", f"d{i}", 1) for i in range(len(docs))]
    folder = write_beir(root / "beir", docs, queries, qrels, split="train")
    neg = root / "negatives.tsv"
    neg.write_text("".join(f"q{i}\t" + ",".join(f"d{j}" for j in range(len(docs)) if j != i) + "\n"
                           for i in range(len(docs))), encoding="utf-8")
    return folder, neg


def model_copy(root: Path, family: str = "bert", dropout: float | None = None) -> Path:
    """A private copy of a tiny model (BERT: hidden and attention dropout set to ``dropout`` when given)."""
    dst = root / f"tiny-{family}"
    if not dst.exists():
        shutil.copytree(tiny_model(family), dst)
        if dropout is not None:
            cfg = json.loads((dst / "config.json").read_text())
            cfg["hidden_dropout_prob"] = cfg["attention_probs_dropout_prob"] = dropout
            (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def tiny_config(root: Path, name: str, *, steps: int = 4, batch_size: int = 4, dropout: float | None = None,
                **sections) -> dict:
    """A raw config dict training a tiny BERT on :func:`tiny_beir_train`; ``sections`` update its sections."""
    beir, neg = tiny_beir_train(root) if not (root / "beir").exists() else (root / "beir", root / "negatives.tsv")
    cfg = {
        "model": {"path": str(model_copy(root, dropout=dropout)), "max_length_q": 12, "max_length_d": 24},
        "data": {"dataset": str(beir), "negatives": str(neg), "n_negatives": 1},
        "loss": {"name": "infonce", "in_batch": True},
        "regularizer": {"query": "l1", "lambda_q": 1e-3, "warmup_q": 3, "document": "flops", "lambda_d": 1e-2,
                        "warmup_d": 3},
        "optim": {"lr": 1e-3, "warmup_steps": 2, "decay": "linear"},
        "train": {"steps": steps, "batch_size": batch_size, "bf16": False, "seed": 5, "checkpoint_every": 0,
                  "progress": False},
        "output": {"dir": str(root / "results" / name), "model_dir": str(root / "work" / name)},
    }
    for section, values in sections.items():
        cfg.setdefault(section, {}).update(values)
    return cfg


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
