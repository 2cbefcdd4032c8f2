"""What a report says: every measure asked for, the significance test and its baseline ("not significant" apart from
"not tested"), the best per column, what latency includes, results before provenance, run files with declared
costs, rows not computed in fp32, judged queries without results, the BEIR papers' table, and a Pareto line that
passes through front points only."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from lsr_eval.cli import main
from lsr_eval.errors import ConfigError
from lsr_eval.report import load_results
from lsr_eval.report.plots import read_tradeoff, tradeoff_figure
from lsr_eval.report.tables import benchmark_tables, datasets_table, efficiency_table

MEASURES = ["nDCG@10", "RR@10", "R@100", "R@1000"]
NAN = math.nan


def _row(dataset, system, kind, values, **extra):
    row = {"dataset": dataset, "system": system, "kind": kind, "model": "m" if kind == "splade" else "",
           "k": None, "status": "ok", "baseline": "bm25"}
    row.update(dict(zip(MEASURES, values)))
    for m in ("nDCG@10", "RR@10"):  # the YAML tested these two only: no _sig/_p for R@100, R@1000
        row.setdefault(f"{m}_sig", "")
        row.setdefault(f"{m}_p", None if system == "bm25" else 0.5)
    row.update(extra)
    return row


def rows() -> list[dict]:
    """Two datasets (one the registry does not know); BM25 the baseline, a bf16 SPLADE significantly better on
    nDCG@10, a fusion, a published run with declared costs (not tested: its queries differed), a run without
    costs."""
    out = []
    for d, shift in (("mydata", 0.0), ("scifact", 0.1)):
        out += [
            _row(d, "bm25", "bm25", [0.50 + shift, 0.45 + shift, 0.80, 0.90], flops=1.0, latency_mean_ms=10.0),
            _row(d, "splade", "splade", [0.60 + shift, 0.50 + shift, 0.85, 0.95], precision="bf16", flops=4.0,
                 latency_mean_ms=30.0, **{"nDCG@10_sig": "†", "nDCG@10_p": 0.001}),
            _row(d, "rrf", "fusion", [0.62 + shift, 0.52 + shift, 0.88, 0.97], flops=5.0, latency_mean_ms=40.0,
                 **{"RR@10_sig": "", "RR@10_p": 1.0}),
            _row(d, "published", "run", [0.70 + shift, 0.40 + shift, 0.90, 0.98], flops=0.5, latency_mean_ms=5.0,
                 declared_costs="flops,latency_mean_ms", cost_source="Pyserini regression page",
                 judged_without_results=3 if d == "mydata" else 0, **{"nDCG@10_p": None, "RR@10_p": None}),
            _row(d, "colleague", "run", [0.55, NAN if d == "scifact" else 0.5, 0.8, 0.9]),
        ]
    out.append(_row("other", "bm25", "bm25", [0.3, 0.3, 0.3, 0.3]))  # a dataset where only BM25 ran
    return out


def write_benchmark(folder: Path, records: list[dict] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "table.json").write_text(json.dumps(records or rows()), encoding="utf-8")
    manifest = {"stage": "benchmark", "experiment": {"name": folder.name}, "created": "2026-12-01T00:00:00+00:00",
                "config": {"significance": {"baseline": "bm25", "test": "t-test", "alpha": 0.05,
                                            "measures": ["nDCG@10", "RR@10"]},
                           "datasets": [{"spec": d, "measures": MEASURES} for d in ("mydata", "scifact")]}}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


@pytest.fixture
def frame(tmp_path):
    results = load_results(write_benchmark(tmp_path / "results" / "bench"))
    return results.combined()


def cells(table) -> pd.DataFrame:
    return table.text.assign(system=table.labels["system"]).set_index("system")


def test_every_measure_asked_for_appears(frame):
    """Before: nDCG@10 only for a dataset the registry does not know, and RR@10 dropped for SciFact."""
    assert list(efficiency_table(frame, "mydata").values.columns)[:4] == MEASURES            # the table's order
    # the registry's official measures first (nDCG@10, R@100, R@1000), then the others
    assert list(efficiency_table(frame, "scifact").values.columns)[:4] == ["nDCG@10", "R@100", "R@1000", "RR@10"]
    tables = benchmark_tables(frame[frame["dataset"] != "other"], name="b")
    assert [t.name for t in tables] == [f"b-{m}" for m in MEASURES]
    with pytest.raises(ConfigError, match="measures not in the results: MAP; they have: nDCG@10, RR@10"):
        efficiency_table(frame, "mydata", measures=["MAP"])
    assert list(efficiency_table(frame, "mydata", measures=["R@100"]).values.columns)[0] == "R@100"


def test_significance_names_test_and_baseline_and_tells_untested_from_not_significant(frame):
    table = efficiency_table(frame, "mydata")
    c = cells(table)
    assert c.loc["splade [bf16]", "nDCG@10"] == "0.6000†"          # significantly better
    assert c.loc["rrf", "nDCG@10"] == "0.6200"                     # tested, not significant: unmarked
    assert c.loc["published", "nDCG@10"] == "0.7000°"              # not tested
    assert c.loc["bm25", "nDCG@10"] == "0.5000"                    # the baseline
    assert c.loc["published", "R@100"] == "0.9000"                 # no test on R@100 at all: no mark
    note = next(n for n in table.notes if n.startswith("significance: "))
    assert ("paired t-test of each system against the baseline bm25 on nDCG@10, RR@10, per query, "
            "Bonferroni-corrected, α = 0.05") in note
    assert "unmarked: not significant; ° not tested" in note
    assert "not tested for significance: R@100, R@1000" in table.notes


def test_best_per_column_is_bold_and_declared_costs_are_marked_and_not_ranked(frame):
    table = efficiency_table(frame, "mydata")
    best = table.best.assign(system=table.labels["system"]).set_index("system")
    assert best["nDCG@10"].tolist() == [False, False, False, True, False]      # published, 0.70
    assert best["R@1000"].sum() == 1 and best.loc["published", "R@1000"]
    # the declared 5 ms and 0.5 FLOPs are not compared with measured ones: BM25 is the fastest measured
    assert best.loc["bm25", "latency mean (ms)"] and not best.loc["published", "latency mean (ms)"]
    c = cells(table)
    assert c.loc["published", "latency mean (ms)"] == "5.00 (declared)" and c.loc["published", "FLOPs"] == \
        "0.500 (declared)"
    assert c.loc["colleague", "FLOPs"] == "missing"
    md = table.to_markdown()
    assert "| **0.7000°** |" in md and r"\textbf{0.7000" in table.to_latex()
    assert '<td class="num best"><strong>10.00</strong></td>' in table.to_html()
    assert any(n.startswith("bold: the best number of its column") for n in table.notes)
    assert any(n.startswith("(declared): a cost the run's source states, not measured by lsr-eval") and
               "published: Pyserini regression page" in n for n in table.notes)


def test_latency_says_what_it_includes_and_rows_say_precision_and_unjudged_queries(frame):
    table = efficiency_table(frame, "mydata")
    assert any(n.startswith("latency: per query") and "query encoding + search" in n for n in table.notes)
    assert "splade [bf16]" in list(table.labels["system"])
    assert any(n.startswith("[bf16]: computed in bf16, not fp32") for n in table.notes)
    assert "judged queries without results in the run (each scored 0): published: 3" in table.notes
    scifact = efficiency_table(frame, "scifact")                      # 0 there: no note
    assert not any(n.startswith("judged queries without results") for n in scifact.notes)


def test_beir_shape_systems_by_datasets_mean_over_shared_datasets(frame):
    table = datasets_table(frame, "RR@10", datasets=["mydata", "scifact", "other"])
    assert list(table.values.columns) == ["mydata", "scifact", "other", "mean"]
    c = cells(table)
    assert c.loc["colleague", "scifact"] == "missing" and c.loc["splade [bf16]", "other"] == "absent"
    # the mean only over mydata, the one dataset where every system has RR@10
    assert table.value({"system": "rrf"}, "mean") == pytest.approx(0.52)
    assert ("mean: over the 1 of 3 datasets on which every system has a RR@10 value (mydata); left out: scifact, "
            "other") in table.notes
    assert c.loc["published", "mydata"] == "0.4000°"                   # markers per cell
    assert c.loc["rrf", "scifact"] == "0.6200"


def test_report_cli_measures_option_and_results_before_provenance(tmp_path, capsys):
    results = write_benchmark(tmp_path / "results" / "bench")
    out = tmp_path / "report"
    assert main(["report", str(results), "--out", str(out), "--measures", "ndcg@10", "R@100"]) == 0
    names = sorted(p.name for p in (out / "tables").glob("*.md"))
    assert names == ["benchmark-bench-R@100.md", "benchmark-bench-nDCG@10.md", "benchmarks.md",
                     "efficiency-mydata.md", "efficiency-scifact.md"]
    eff = (out / "tables" / "efficiency-scifact.md").read_text()
    assert "| nDCG@10 | R@100 |" in eff and "RR@10" not in eff.split("\n")[2]
    page = (out / "index.html").read_text(encoding="utf-8")
    first_result = page.index('id="table-benchmark-bench-nDCG@10"')
    assert first_result < page.index('<h2 id="provenance">') < page.index("bench/manifest.json")
    assert page.index('id="table-benchmarks"') > page.index('<h2 id="provenance">')
    assert main(["report", str(results), "--out", str(tmp_path / "r2"), "--measures", "MAP"]) == 2
    assert "measures not in the results: MAP" in capsys.readouterr().err
    assert not (tmp_path / "r2").exists()


# ---- figures ----

def test_run_files_in_the_figure_declared_costs_hatched_and_runs_without_cost_left_off(frame):
    fig = tradeoff_figure(frame, "mydata", "flops")
    data = read_tradeoff(fig)
    assert data["points"]["published"] == [0.5, 0.7] and data["labels"]["published"] == "published (declared)"
    assert data["labels"]["splade"] == "splade [bf16]"
    assert "colleague (a run file without a declared flops: lsr-eval did not run it, so cannot measure it)" in \
        data["note"]
    assert "cost declared by the run's source, not measured by lsr-eval: published: Pyserini regression page" in \
        data["note"]
    ax = fig.axes[0]
    hatches = {c.get_gid(): c.get_hatch() for c in ax.collections if (c.get_gid() or "").startswith("point:")}
    assert hatches["point:published"] and not hatches["point:bm25"]
    legend = {t.get_text(): h for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles)}
    # each family's entry carries its kind's marker (before: a circle for all), and each kind has its entry
    assert legend["BM25"].get_marker() == "s" and legend["rrf"].get_marker() == "D"
    assert legend["published"].get_marker() == "^" and legend["kind: run file"].get_marker() == "^"
    assert legend["m"].get_marker() == "o"
    assert "cost declared by the run's source" in legend


def _distance_to_polyline(p, line) -> float:
    (px, py), best = p, math.inf
    for (x0, y0), (x1, y1) in zip(line, line[1:]):
        dx, dy = x1 - x0, y1 - y0
        t = max(0.0, min(1.0, ((px - x0) * dx + (py - y0) * dy) / (dx * dx + dy * dy or 1.0)))
        best = min(best, math.hypot(px - x0 - t * dx, py - y0 - t * dy))
    return best


def test_pareto_line_passes_through_front_points_only():
    """A staircase from (1, .5) to (4, .7) ran through the dominated (3, .5) and (4, .6)."""
    frame = pd.DataFrame([
        {"system": "a", "kind": "bm25", "flops": 1.0, "nDCG@10": 0.5},
        {"system": "b", "kind": "splade", "model": "x", "flops": 3.0, "nDCG@10": 0.5},
        {"system": "c", "kind": "splade", "model": "x", "flops": 4.0, "nDCG@10": 0.6},
        {"system": "d", "kind": "fusion", "flops": 4.0, "nDCG@10": 0.7},
        {"system": "e", "kind": "fusion", "flops": 9.0, "nDCG@10": 0.75},
    ]).assign(dataset="d", status="ok", k=NAN)
    fig = tradeoff_figure(frame, "d", "flops")
    data = read_tradeoff(fig)
    assert data["front"] == [[1.0, 0.5], [4.0, 0.7], [9.0, 0.75]]
    ax = fig.axes[0]
    front_line = next(line for line in ax.lines if line.get_gid() == "pareto-front")
    if front_line.get_drawstyle() != "default":  # a staircase: the path matplotlib draws, in pixels
        pixels = front_line._get_transformed_path().get_fully_transformed_path().vertices
    else:
        pixels = ax.transData.transform(list(zip(front_line.get_xdata(), front_line.get_ydata())))
    for system in ("b", "c"):  # off the front: at least a marker's width away from the line
        xy = ax.transData.transform(data["points"][system])
        assert _distance_to_polyline(xy, [tuple(v) for v in pixels]) > 8, system


def test_benchmark_rows_of_kind_run_go_through_the_whole_report(tmp_path):
    results = write_benchmark(tmp_path / "results" / "bench")
    out = tmp_path / "report"
    assert main(["report", str(results), "--out", str(out)]) == 0
    drawn = json.loads((out / "plots" / "flops-mydata.json").read_text())
    assert "published" in drawn["points"] and "colleague" not in drawn["points"]
    table = (out / "tables" / "benchmark-bench-nDCG@10.md").read_text()
    assert re.search(r"\| published \| \*\*0\.7000°\*\* \| \*\*0\.8000°\*\* \|", table)
