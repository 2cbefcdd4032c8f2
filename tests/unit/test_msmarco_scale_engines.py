"""D4 (studies/msmarco_scale/grid.py, report.py): tie-aware digests and recall, the tuning rule and the models by
hand; the committed result made again from its rows (summary, models, the page's table, every figure's data), BMP
safe's top k equal to PISA's for every query at every size, and the run following its registration."""

from __future__ import annotations

import json
import lzma
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "studies" / "msmarco_scale"))
from grid import choose, digest, recall, stage_models, summary_md, tie_aware  # noqa: E402
from test_msmarco_scale_memory import _close, _descends_from_registration  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RESULT = REPO / "results" / "studies" / "msmarco-scale-engines"


def test_the_top_k_is_compared_up_to_ties_at_the_cut():
    a = [("d1", 9), ("d2", 7), ("d3", 5), ("d4", 5)]
    b = [("d2", 7), ("d1", 9), ("d4", 5), ("d3", 5)]          # the other tie-break at the cut (and order above)
    assert tie_aware(a, 3) == (["d1", "d2"], 5)
    assert digest(a, 3) == digest(b, 3)
    assert digest(a, 3) != digest([("d1", 9), ("d2", 7), ("d5", 6)], 3)   # another document above the cut
    assert digest(a, 3) != digest([("d1", 9), ("d2", 7), ("d3", 4)], 3)   # another k-th score
    assert tie_aware(a[:2], 3) == (["d1", "d2"], None)                     # fewer than k: every hit
    assert digest(a[:2], 3) != digest(a[:2] + [("d9", 1)], 3)


def test_recall_counts_a_document_tied_with_the_exact_kth_score_as_found():
    exact = [("d1", 9), ("d2", 7), ("d3", 5)]
    assert recall([("d1", 9), ("d2", 7), ("d4", 5)], exact, 3) == 1.0      # d4 ties the 3rd score: found
    assert recall([("d1", 9), ("d4", 4), ("d5", 3)], exact, 3) == pytest.approx(1 / 3)
    assert recall([("d1", 9)], exact[:2], 3) == 0.5                         # fewer than k exact hits: over those
    assert recall([("d1", 9)], [], 3) is None                               # no exact hit: skipped


def test_the_tuning_rule_takes_the_fastest_reaching_the_target_else_the_most_accurate():
    tried = [{"knobs": 1, "recall_at_10": 0.99, "mean_ms": 3.0}, {"knobs": 2, "recall_at_10": 0.95, "mean_ms": 1.0},
             {"knobs": 3, "recall_at_10": 0.94, "mean_ms": 0.5}]
    assert choose(tried) == (tried[1], True)
    low = [{"knobs": 1, "recall_at_10": 0.80, "mean_ms": 3.0}, {"knobs": 2, "recall_at_10": 0.90, "mean_ms": 9.0}]
    assert choose(low) == (low[1], False)


def test_the_models_by_hand():
    # index RSS exactly 100 MiB + 2 MiB per million postings on the fit sizes; 2M measures 10% above the line
    stages = {}
    for n, posts in ((1, 1_000_000), (2, 2_000_000), (3, 4_000_000), (4, 8_000_000)):
        stages[f"{n}/generate"] = {"status": "ok", "postings": posts}
        mb = 100 + 2 * posts / 1e6
        stages[f"{n}/index-bmp"] = {"status": "ok", "peak_rss_bytes": mb * 2**20 * (1.1 if n == 4 else 1),
                                    "seconds": 1 + posts / 1e6}
    models = stage_models(stages, (1, 2, 3), 4)
    m = models["bmp/index/peak_rss_mb"]
    assert m["fixed"] == pytest.approx(100) and m["per_million_postings"] == pytest.approx(2)
    assert m["predicted"] == pytest.approx(116) and m["error"] == pytest.approx(0.1 / 1.1)
    assert models["bmp/index/seconds"]["error"] == pytest.approx(0)
    assert "seismic/index/peak_rss_mb" not in models and "bmp/search/seconds" not in models   # not measured


def _committed() -> dict:
    if not (RESULT / "engines.json").is_file():
        pytest.skip("D4 has not been committed")
    return json.loads((RESULT / "engines.json").read_text())


def test_the_committed_result_is_made_again_from_its_rows():
    doc = _committed()
    assert summary_md(doc) == (RESULT / "summary.md").read_text()
    made = json.loads(json.dumps(stage_models(doc["stages"], doc["fit_sizes"], doc["check_size"])))
    assert _close(made, doc["models"]), (made, doc["models"])
    assert _descends_from_registration(RESULT / "manifest.json", "## D4: every engine at 10k-2M")


def test_the_page_table_and_every_figure_data_are_made_again(tmp_path):
    from report import figures, predictions_md, tables_md

    doc = _committed()
    full = json.loads((RESULT.parent / "msmarco-scale-8.8m" / "full.json").read_text())
    assert tables_md(doc) + "\n" + predictions_md(doc, full) == (RESULT / "tables.md").read_text()
    drawn = figures(doc, tmp_path)
    committed = sorted(p.parent.name for p in (RESULT / "figures").glob("*/figure.csv"))
    assert sorted(drawn) == committed
    for name in drawn:
        assert (tmp_path / "figures" / name / "figure.csv").read_text() == \
            (RESULT / "figures" / name / "figure.csv").read_text(), name
        assert (RESULT / "figures" / name / "figure.png").is_file()


def test_bmp_safe_returns_pisa_top_k_for_every_query_at_every_size():
    doc = _committed()
    with lzma.open(RESULT / "digests.json.xz", "rt") as f:
        digests = json.load(f)
    sizes = sorted({r["size"] for r in doc["rows"]})
    compared = 0
    for n in sizes:
        for qset, k in (("q256", 10), ("q256", 1000), ("q32", 10)):
            pisa, bmp = digests.get(f"{n}/pisa-exact/{qset}/k{k}"), digests.get(f"{n}/bmp-safe/{qset}/k{k}")
            if pisa is None or bmp is None:
                continue
            assert pisa.keys() == bmp.keys() and len(pisa) == doc["queries"]
            differ = [q for q in pisa if pisa[q] != bmp[q]]
            assert differ == [], f"{n} documents, {qset}, k={k}: BMP safe differs from PISA on {differ[:5]}"
            compared += 1
    assert compared == 3 * len(sizes)
