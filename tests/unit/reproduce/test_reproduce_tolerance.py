"""The tolerance rules of ``lsr-eval reproduce``, by hand: each value's kind from its key, each kind's rule, and
the verdict on a row (lsr_eval/reproduce/tolerance.py, compare.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from lsr_eval.errors import ConfigError
from lsr_eval.reproduce.compare import COULD_NOT_RUN, DIFFERS, REPRODUCED, Comparison, RowOutcome, compare, flatten
from lsr_eval.reproduce.tolerance import Tolerances, kind_of


@pytest.mark.parametrize("key, value, kind", [
    ("table.nDCG@10", 0.6789, "metric"),
    ("table.R@1000(rel=2)", 1.0, "metric"),          # a measure stays a metric even when it is 1.0
    ("table.nDCG@10_p", 0.03, "metric"),
    ("table.nDCG@10_sig", "†", "label"),
    ("table.judged_without_results", 15.0, "count"),  # an integer a table with empty cells stores as a float
    ("counts.search.hits", 300000, "count"),
    ("counts.export.documents_out", 5183, "count"),
    ("table.postings", 510936.0, "model-count"),
    ("counts.encoding.total_postings", 1287787, "model-count"),
    ("counts.export.dropped_zero_weights", 7543, "model-count"),
    ("counts.documents_out", 444022, "model-count"),   # the documents of a fused run
    ("table.flops", 0.8442735867258344, "metric"),
    ("table.index_bytes", 10577571.0, "size"),
    ("counts.index.seconds", 11.5, "timing"),
    ("table.latency_p50_ms", 53.4, "timing"),
    ("throughput.encoding.docs_per_s", 25.7, "timing"),
    ("efficiency.latency.samples_ms.total", [72.9, 90.3], "timing"),
    ("timings.bf16", 865.6, "timing"),                # anything under a timings section
    ("bench.ratios.pyserini.encode.p50", 3.38, "timing"),  # bench_query_path's speed ratios
    ("results.engines.bm25.cpu_ratio", 0.16, "timing"),
    ("results.engines.bm25.heap_sweep[0].process_rss_mb", 299.2, "timing"),  # memory samples of a run
    ("results.engines.impact.heap_sweep_summary.lsr-eval.old_gen_peak_range_mb", [9.9, 10.0], "timing"),
    ("experiment.k1", 0.9, "metric"),
    ("experiment.hits", 1000, "count"),
    ("table.status", "ok", "label"),
    ("counts.search.queries_without_hits_ids", ["q1", "q2"], "label"),
    ("tuning.weights", [0.25, 0.75], "metric"),
])
def test_kind_of_a_value_comes_from_its_key(key, value, kind):
    assert kind_of(key, value) == kind


def test_metric_tolerance_is_absolute_up_to_one_relative_above_and_inclusive():
    t = Tolerances()
    assert t.agree("metric", 0.6789, 0.6789 + 1e-4)          # exactly the bound passes
    assert t.agree("metric", 0.6789, 0.67885)                  # 5e-5 away
    assert not t.agree("metric", 0.6789, 0.6789 + 1.5e-4)
    assert t.agree("metric", 51420.11, 51420.08)               # postings per query: 1e-4 x 51420 = 5.1
    assert t.agree("metric", 9.9209, 9.9218) and not t.agree("metric", 9.9209, 9.9220)  # bound 9.92e-4
    wide = Tolerances.parse(["metric=1e-3"])
    assert wide.agree("metric", 0.6789, 0.6798) and not wide.agree("metric", 0.6789, 0.6800)


def test_counts_and_labels_compare_exactly_timings_never():
    t = Tolerances()
    assert t.agree("count", 5183, 5183.0) and not t.agree("count", 5183, 5182)
    assert Tolerances.parse(["count=1"]).agree("count", 5183, 5182)
    assert t.agree("label", "†", "†") and not t.agree("label", "†", "")
    assert t.agree("timing", 1.0, 1000.0)                        # never compared
    assert t.agree("label", None, math.nan) and not t.agree("metric", 0.5, None)  # empty cells agree only with empty


def test_sizes_and_model_counts_compare_relatively():
    t = Tolerances.parse(["size=0.01"])
    assert t.agree("size", 1000, 1009) and not t.agree("size", 1000, 1011)
    default = Tolerances()                                       # 0.1%: what another CPU's rounding moves
    assert default.agree("size", 2891244, 2891569) and not default.agree("size", 1000, 1002)
    assert default.agree("model-count", 7543, 7541) and default.agree("model-count", 444022, 444023)
    assert not default.agree("model-count", 7543, 7530)
    assert not Tolerances.parse(["model-count=0"]).agree("model-count", 1287787, 1287785)


def test_lists_compare_element_by_element():
    t = Tolerances()
    assert t.agree("metric", [0.25, 0.75], [0.25004, 0.74997])
    assert not t.agree("metric", [0.25, 0.75], [0.25, 0.76])
    assert not t.agree("metric", [0.25, 0.75], [0.25])


@pytest.mark.parametrize("item, message", [
    ("metric", "KIND=VALUE"), ("speed=1", "KIND=VALUE"), ("metric=abc", "not a number"),
    ("metric=-1", ">= 0"), ("timing=1", "never compared"),
])
def test_bad_tolerances_are_refused(item, message):
    with pytest.raises(ConfigError, match=message):
        Tolerances.parse([item])


def test_tolerances_describe_each_rule():
    assert Tolerances.parse(["metric=1e-3", "size=none"]).describe() == {
        "metric": "within 0.001", "count": "exactly", "model-count": "within 0.001 relative", "size": "not compared",
        "label": "exactly", "timing": "not compared"}


def test_flatten_drops_where_and_when_keeps_what():
    record = {"counts": {"search": {"hits": 10}}, "machine": {"cpu": "x"}, "commit": "abc",
              "experiment": {"dataset": {"corpus": {"path": "/a", "mtime": 1, "bytes": 5}}},
              "folds": [{"weights": [0.5, 0.5]}, {"weights": [0.4, 0.6]}],
              "artefacts": {"bm25_index": "/w/indexes/x"},
              "bench": {"threads": 2, "artefacts": {"model_dir": "/m"},
                        "engine": {"index": "/w/i", "topics": "/w/t.tsv", "run_files": {"a": "/w/a.trec"}}}}
    assert flatten({"index": {"total_indexed": 5}}) == {"index.total_indexed": 5}   # a section, not a path
    assert flatten(record) == {"counts.search.hits": 10, "experiment.dataset.corpus.bytes": 5,
                               "folds[0].weights": [0.5, 0.5], "folds[1].weights": [0.4, 0.6]}


def test_a_row_is_reproduced_when_every_recorded_value_agrees():
    old = {"table.nDCG@10": 0.6789, "counts.search.hits": 300000, "counts.index.seconds": 11.5,
           "table.status": "ok", "table.nDCG@10_p": None}
    new = {"table.nDCG@10": 0.67893, "counts.search.hits": 300000, "counts.index.seconds": 30.0,
           "table.status": "ok", "table.extra": 1}                        # a column only the rerun has: ignored
    c = compare(old, new, Tolerances())
    assert c.reproduced and c.compared == {"metric": 2, "count": 1, "not compared": 1, "label": 1}
    row = RowOutcome("benchmarks/x", "scifact bm25", REPRODUCED, comparison=c)
    assert row.line() == "benchmarks/x scifact bm25: reproduced (4 values)"


def test_a_row_differs_naming_old_and_new_values():
    old = {"table.nDCG@10": 0.6789, "counts.search.hits": 300000, "experiment.k1": 0.9, "table.RR@10": 0.5}
    new = {"table.nDCG@10": 0.6803, "counts.search.hits": 299999, "experiment.k1": 1.2}
    c = compare(old, new, Tolerances())
    assert [str(d) for d in c.differences] == ["experiment.k1 0.9 -> 1.2", "table.nDCG@10 0.6789 -> 0.6803",
                                               "counts.search.hits 300000 -> 299999", "table.RR@10 0.5 -> (absent)"]
    row = RowOutcome("benchmarks/x", "scifact bm25", DIFFERS, comparison=c)
    assert row.failing and row.summary(limit=2) == ("differs: experiment.k1 0.9 -> 1.2; "
                                                     "table.nDCG@10 0.6789 -> 0.6803; +2 more")


def test_a_manifest_key_the_rerun_no_longer_records_is_counted_not_compared():
    old = {"counts.index.indexed": 5183, "table.nDCG@10": 0.5}
    c = compare(old, {"counts.index.anserini.indexed": 5183, "table.nDCG@10": 0.5}, Tolerances())
    assert c.reproduced and c.compared == {"no longer recorded": 1, "metric": 1}
    row = RowOutcome("r", "x", REPRODUCED, comparison=c)
    assert row.summary() == "reproduced (1 values; 1 no longer recorded)"
    assert not compare(old, {"counts.index.indexed": 5183}, Tolerances()).reproduced  # a table cell must be there


def test_skipped_keys_are_not_compared_and_could_not_run_is_not_failing():
    c = compare({"table.nDCG@10_p": 0.01, "table.nDCG@10": 0.5}, {"table.nDCG@10_p": 0.5, "table.nDCG@10": 0.5},
                Tolerances(), skip={"table.nDCG@10_p"})
    assert c.reproduced and c.compared == {"metric": 1}
    row = RowOutcome("r", "x", COULD_NOT_RUN, "missing model: m", Comparison())
    assert not row.failing and row.line() == "r x: could not run: missing model: m"


def test_a_difference_shows_enough_digits_to_tell_old_from_new():
    from lsr_eval.reproduce.compare import Difference

    assert str(Difference("table.postings_per_query", "metric", 51420.10999999999, 51420.08)) == \
        "table.postings_per_query 51420.11 -> 51420.08"
    assert str(Difference("table.nDCG@10", "metric", 0.6789094274508312, 0.6803342)) == \
        "table.nDCG@10 0.678909 -> 0.680334"


def test_a_path_recorded_anchored_agrees_with_this_machines_absolute_one():
    from lsr_eval.manifest import anchor_paths, anchor_roots
    from lsr_eval.reproduce.compare import compare
    from lsr_eval.reproduce.tolerance import Tolerances

    here = str(Path(__file__).resolve())
    anchored = anchor_paths(here, anchor_roots())
    assert anchored != here
    assert not compare({"settings.model": anchored}, {"settings.model": here}, Tolerances()).differences
    assert compare({"settings.model": anchored}, {"settings.model": here + "x"}, Tolerances()).differences


def test_a_query_paths_breakdown_is_a_timing():
    from lsr_eval.reproduce.tolerance import kind_of

    assert kind_of("bench.breakdown.lsr-eval.parts.session.share_of_mean_total", 0.37) == "timing"


def test_a_benchmarks_timed_samples_and_command_lines_are_not_results():
    from lsr_eval.reproduce.compare import flatten
    from lsr_eval.reproduce.tolerance import kind_of

    assert kind_of("results.samples.evaluate.before", [2.7, 2.8]) == "timing"
    assert "results.commands.evaluate" not in flatten({"results": {"commands": {"evaluate": ["python", "/tmp/x"]}}})
