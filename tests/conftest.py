"""Shared fixtures: the real data in ``../shared/data`` and small corpora written on the fly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LSR_EVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


def pytest_configure(config):
    """Point ir_datasets at a private cache seeded from ../shared before anything imports it (``import ranx``
    imports ir_datasets, which fixes its home folder at import time)."""
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="lsr-eval-irds-"))
    os.environ["IR_DATASETS_HOME"] = str(home)
    if (SHARED / "ir_datasets").is_dir():
        from lsr_eval.data.irds_cache import seed_cache

        seed_cache(SHARED / "ir_datasets", home)


def shared_path(*parts: str) -> Path:
    """A path under ``../shared/data``; skips the test where it is absent, except in CI, where it must exist."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        if os.environ.get("CI"):
            raise FileNotFoundError(f"{path} is missing: CI needs ../shared/data beside the clone")
        pytest.skip(f"{path} not available")
    return path


def splade_tiny_dir() -> Path:
    """The offline splade-tiny weights; skips the test where they are absent, except in CI, where they must exist."""
    from lsr_eval.errors import InputError
    from lsr_eval.models.offline import resolve_model

    try:
        return Path(resolve_model("splade-tiny"))
    except InputError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(e))


@pytest.fixture
def scifact_dir() -> Path:
    return shared_path("beir", "scifact")


def write_beir(folder: Path, docs: list[dict], queries: list[dict], qrels: list[tuple[str, str, int]],
               split: str = "test") -> Path:
    """Write a BEIR-format folder."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q) + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    with open(folder / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q, d, r in qrels:
            f.write(f"{q}\t{d}\t{r}\n")
    return folder


TINY_DOCS = [
    {"_id": "d1", "title": "Sparse retrieval", "text": "Learned sparse retrieval with SPLADE expands documents."},
    {"_id": "d2", "title": "", "text": "BM25 is a strong lexical baseline for retrieval."},
    {"_id": "d3", "title": "Cats", "text": "Cats sleep most of the day."},
    {"_id": "d4", "title": "Dense", "text": "Dense retrieval encodes queries and documents as vectors."},
    {"_id": "q2", "title": "Self", "text": "The query text itself: lexical baseline retrieval."},
]
TINY_QUERIES = [
    {"_id": "q1", "text": "sparse retrieval SPLADE"},
    {"_id": "q2", "text": "lexical baseline retrieval"},
    {"_id": "q3", "text": "sleeping cats"},
]
TINY_QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 2)]


@pytest.fixture
def tiny_beir(tmp_path: Path) -> Path:
    return write_beir(tmp_path / "tiny", TINY_DOCS, TINY_QUERIES, TINY_QRELS)


class ScifactImpact:
    """SciFact test encoded by splade-tiny once per session: the exported ``JsonVectorCollection``, its Anserini
    impact index, and the test queries as integer weight maps (the shared input of the engine tests)."""

    def __init__(self, work: Path) -> None:
        from lsr_eval.data.datasets import load_dataset
        from lsr_eval.encode.queries import encode_queries
        from lsr_eval.encode.splade import SpladeTextEncoder
        from lsr_eval.experiments.splade import SpladeSettings, ensure_impact_index, load_model
        from lsr_eval.export.queries import query_weight_maps

        model_dir = splade_tiny_dir()
        self.dataset = load_dataset(str(shared_path("beir", "scifact")), "test")
        settings = SpladeSettings(model=str(model_dir))
        model = load_model(settings)
        stages = ensure_impact_index(self.dataset, model, settings, work, threads=2)
        self.collection = Path(stages["paths"]["collection"])
        self.anserini_index = Path(stages["index_dir"])
        encoded = encode_queries(self.dataset.queries(), SpladeTextEncoder(model.query), batch_size=32)
        self.queries: dict[str, dict[str, int]] = query_weight_maps(encoded.vectors, settings.scale)
        self.qrels = self.dataset.qrels()
        self.documents = stages["export"]["counts"]["documents_out"]


@pytest.fixture(scope="session")
def scifact_impact(tmp_path_factory) -> ScifactImpact:
    """SciFact test through splade-tiny (encoded once per session, about a minute on 2 cores)."""
    return ScifactImpact(tmp_path_factory.mktemp("scifact-impact"))
