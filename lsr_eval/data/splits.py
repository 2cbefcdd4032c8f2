"""Carve a held-out dev split out of a BEIR folder's training queries, for selection that never sees test.

The new folder links the corpus, the queries and the other qrels files, and writes two qrels files: ``dev`` (``n``
judged queries drawn with ``numpy.random.default_rng(seed)``) and ``fit`` (the rest of the source split). Training
reads ``fit``; checkpoints, term budgets and fusion weights are chosen on ``dev``; ``test`` stays untouched.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lsr_eval.data.trec_files import read_qrels
from lsr_eval.errors import InputError

DEV, FIT = "dev", "fit"
LINKED = ("corpus.jsonl", "queries.jsonl")


def carve_dev_split(source: str | os.PathLike, out: str | os.PathLike, *, split: str = "train", n: int,
                    seed: int) -> dict[str, Any]:
    """Write ``out`` (a BEIR folder) with ``qrels/dev.tsv`` and ``qrels/fit.tsv``; returns the counts."""
    import numpy as np

    src, dst = Path(source), Path(out)
    qrels_path = src / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        raise InputError(f"{qrels_path}: no such qrels file (a BEIR folder with a '{split}' split is expected)")
    for name in LINKED:
        if not (src / name).is_file():
            raise InputError(f"{src / name}: missing (a BEIR folder holds {' and '.join(LINKED)})")
    qrels = read_qrels(qrels_path)
    qids = sorted(qrels)
    if not 0 < n < len(qids):
        raise InputError(f"{qrels_path}: {len(qids)} judged queries; a dev split of n={n} must leave some to fit")
    if dst.resolve() == src.resolve():
        raise InputError(f"{dst}: the output is the source folder; carve-dev writes another folder (its files link "
                         "the source's)")
    picked = set(np.random.default_rng(seed).choice(len(qids), size=n, replace=False).tolist())
    dev = [q for i, q in enumerate(qids) if i in picked]
    (dst / "qrels").mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        _link(src / name, dst / name)
    for other in sorted((src / "qrels").glob("*.tsv")):
        if other.stem not in (DEV, FIT):
            _link(other, dst / "qrels" / other.name)
    for name, ids in ((DEV, dev), (FIT, sorted(set(qids) - set(dev)))):
        with open(dst / "qrels" / f"{name}.tsv", "w", encoding="utf-8") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            for q in ids:
                for d, g in sorted(qrels[q].items()):
                    f.write(f"{q}\t{d}\t{g}\n")
    return {"source": str(src), "split": split, "seed": seed, "queries": len(qids), DEV: len(dev),
            FIT: len(qids) - len(dev), "dev_qids": dev}


def _link(target: Path, link: Path) -> None:
    if link.exists() and not link.is_symlink():  # a real file (another data set's): never deleted
        raise InputError(f"{link}: a file, not a link from an earlier carve-dev; choose an empty --out folder")
    if link.is_symlink():
        link.unlink()
    link.symlink_to(target.resolve())
