"""One query length across the papers' rows: every SPLADE system of the papers' benchmarks, its settings resolved as
the benchmark resolves them, cuts queries at 256 tokens (naver's retrieval, ``splade/retrieve.py``, and the trained
rows), so that BEIR columns (ArguAna's long queries above all) compare across rows; the toolkit's default is 64."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsr_eval.benchmark.config import load_config
from lsr_eval.models.splade import MAX_LENGTH_QUERY
from lsr_eval.pipeline.settings import SpladeSettings

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "pipelines" / "benchmarks"
PAPER_BENCHMARKS = ("paper-efficient-splade.yaml", "paper-rescaling.yaml", "efficient-splade-released.yaml",
                    "paper-beir13.yaml")
#: Rows that keep another length on purpose: paper-beir13's splade-tiny is beir-offline's committed row, whose
#: identity (and cached runs) must not change (tests/integration/test_beir_offline_config.py).
KEPT = {("paper-beir13.yaml", "splade-tiny")}
QUERY_LENGTH = 256


def short_queries(path: Path) -> list[str]:
    """The SPLADE systems of benchmark ``path`` whose resolved query length is not :data:`QUERY_LENGTH`."""
    out = []
    for system in load_config(path).systems:
        if system.kind != "splade" or (path.name, system.name) in KEPT:
            continue
        length = SpladeSettings.from_flat(**system.params).encode.max_length_q
        if length != QUERY_LENGTH:
            out.append(f"{system.name}: max_length_q {length or f'unset (the default, {MAX_LENGTH_QUERY})'}")
    return out


@pytest.mark.parametrize("name", PAPER_BENCHMARKS)
def test_every_paper_splade_system_cuts_queries_at_256_tokens(name):
    assert short_queries(BENCH / name) == []
    assert any(s.kind == "splade" for s in load_config(BENCH / name).systems)


def test_a_system_without_the_length_is_found(tmp_path):
    """The check can fail: a released pair without max_length_q (the default 64) and one with 128."""
    (tmp_path / "b.yaml").write_text(
        "name: b\nout: results/benchmarks/b\ndatasets: [{spec: scifact}]\nsystems:\n"
        "  - {name: released, kind: splade, model: naver/efficient-splade-V-large-doc,\n"
        "     query_model: naver/efficient-splade-V-large-query}\n"
        "  - {name: cut, kind: splade, model: splade-tiny, max_length_q: 128}\n"
        "  - {name: ok, kind: splade, model: splade-tiny, max_length_q: 256}\n"
        "  - {name: bm25, kind: bm25}\n", encoding="utf-8")
    assert short_queries(tmp_path / "b.yaml") == [f"released: max_length_q unset (the default, {MAX_LENGTH_QUERY})",
                                                   "cut: max_length_q 128"]
