"""The efficiency paper's own table (benchmark :data:`EFFICIENCY_BENCHMARK`; Lassance & Clinchant, "An Efficiency
Study for SPLADE Models", arXiv:2207.03834): one row per model, MS MARCO dev RR@10 and R@1000, PISA retrieval and
query encoding latency (p50), BEIR-13 mean nDCG@10 alone and fused with BM25 (the ``rrf-<model>`` row). Its note
quotes the paper's published figures, labelled "published", beside ours."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import pandas as pd

from lsr_eval.errors import ConfigError
from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.marks import CellNotes, best_cells
from lsr_eval.report.papers.cells import cell_value, group_mean
from lsr_eval.report.table import Table
from lsr_eval.report.tables import _table, _unit_note, result_rows
from lsr_eval.train.config import RegularizerConfig, from_dict

EFFICIENCY_BENCHMARK = "paper-efficient-splade"
EFFICIENCY_PUBLISHED = ("published (Lassance & Clinchant, arXiv:2207.03834; naver's model cards), MS MARCO dev "
                        "RR@10 / R@1000 / PISA retrieval latency + query encoding latency: V-large 38.8 / 98.0 / "
                        "29.0 ms + 45.3 ms; VI-BT-large 38.0 / 97.8 / 31.1 ms + 0.7 ms")
#: Prefix of a model's fusion with BM25 in the efficiency benchmark.
FUSED_PREFIX = "rrf-"

#: Efficiency table columns: (header, dataset, source column, kind, better).
EFFICIENCY_PAPER_COLUMNS = (
    ("MS MARCO dev RR@10", "msmarco-dev", "RR@10", "effectiveness", "max"),
    ("MS MARCO dev R@1000", "msmarco-dev", "R@1000", "effectiveness", "max"),
    ("DL19 nDCG@10 (ours)", "dl19", "nDCG@10", "effectiveness", "max"),
    ("PISA retrieval mean (ms)", "msmarco-dev", "latency_search_mean_ms", "latency", "min"),
    ("PISA retrieval p50 (ms)", "msmarco-dev", "latency_search_p50_ms", "latency", "min"),
    ("PISA retrieval p99 (ms)", "msmarco-dev", "latency_search_p99_ms", "latency", "min"),
    ("retrieval / BM25 on PISA", "msmarco-dev", "latency_search_ratio_bm25", "ratio", "min"),
    ("query encoding mean (ms)", "msmarco-dev", "latency_encode_mean_ms", "latency", "min"),
)
#: The latency protocol of the efficiency table beside naver's (efficient_splade_pisa/README.md), for its note.
EFFICIENCY_PROTOCOL = (
    "latency, ours: every MS MARCO dev query one at a time on one thread, k = 1000, through pyterrier-pisa (one Python "
    "call per query): PISA block_simdbp, block_max_wand over fixed-40 block-max data, quantized scorer, weighted "
    "queries; PISA's queries-tool protocol: one untimed pass, then two timed passes of the engine's own call (no "
    "tie re-query), every time pooled; mean, p50 and p99 of retrieval, query encoding timed apart; the binding's own "
    "overhead per query is measured in results/studies/pisa-timing; "
    "'retrieval / BM25 on PISA' divides by the mean of BM25 on the same PISA settings in the same run (the paper's "
    "'within 4 ms of BM25 under the same computing constraints'). naver's: PISA's own C++ queries tool over the "
    "same index settings on their CPU (not stated), query encoding timed apart; hardware differs, so compare "
    "ratios, not milliseconds (docs/efficiency-paper.md)")


#: How the ``training`` label names a run's middle-trained start (``model.middle_from``).
MIDDLE_LABELS = {"naver": "naver's mlm_flops checkpoints", "ours": "ours (lsr-eval middle-train)"}


def training_label(run: Any) -> str:
    """What a row's training run (:class:`lsr_eval.report.loading.TrainingRun`, None for no run) recorded of the
    settings the paper's rows differ by: the document regulariser's weight and, under naver's sum, the weight the
    loss used (:attr:`lsr_eval.train.config.RegularizerConfig.effective_lambda_d`); where its middle-trained
    encoders came from. Empty when the run recorded neither."""
    config = (getattr(run, "manifest", None) or {}).get("config")
    if not isinstance(config, dict):
        return ""
    parts = []
    try:
        reg = from_dict(RegularizerConfig, config.get("regularizer") or {}, "the run's config", "regularizer.")
    except ConfigError:
        reg = None
    if reg is not None and reg.document != "none":
        parts.append(f"lambda_d {reg.lambda_d:g}" + (f" (effective {reg.effective_lambda_d:g}: naver's sum, "
                                                     f"counted {reg.doc_count} times)" if reg.naver_sum else ""))
    middle = (config.get("model") or {}).get("middle_from")
    if middle:
        parts.append(f"middle training: {MIDDLE_LABELS.get(middle, middle)}")
    return "; ".join(parts)


def _training_labels(frame: pd.DataFrame, systems: Sequence[str], runs: Mapping[str, Any]) -> list[str]:
    """Each system's :func:`training_label`, through the training run its rows are linked to (a ``run`` column)."""
    if "run" not in frame.columns:
        return [""] * len(systems)
    out = []
    for s in systems:
        linked = [r for r in frame.loc[frame["system"] == s, "run"] if isinstance(r, str) and r]
        out.append(training_label(runs.get(linked[0])) if linked else "")
    return out


def efficiency_paper_table(frame: pd.DataFrame, *, name: str = "paper-efficient-splade",
                           fmt: NumberFormat = NumberFormat(), fused_prefix: str = FUSED_PREFIX,
                           runs: Mapping[str, Any] | None = None) -> Table:
    """One row per model of the efficiency benchmark's rows (fusions ``rrf-<model>`` give the fused column, not a
    row of their own), labelled with its training (:func:`training_label`) where the rows are linked to ``runs``;
    see the module doc."""
    rows = result_rows(frame)
    systems = [s for s in dict.fromkeys(frame["system"])
               if not (str(s).startswith(fused_prefix) and str(s)[len(fused_prefix):] in set(frame["system"]))]
    notes = CellNotes()
    headers = [c[0] for c in EFFICIENCY_PAPER_COLUMNS] + ["BEIR-13 mean nDCG@10", "BEIR-13 mean nDCG@10, RRF with BM25"]
    better = {c[0]: c[4] for c in EFFICIENCY_PAPER_COLUMNS} | {headers[-2]: "max", headers[-1]: "max"}
    values: dict[str, list[float]] = {h: [] for h in headers}
    text: dict[str, list[str]] = {h: [] for h in headers}
    for s in systems:
        for header, dataset, column, kind, _ in EFFICIENCY_PAPER_COLUMNS:
            v, why = cell_value(rows, dataset, s, column, notes)
            if math.isnan(v):
                values[header].append(math.nan)
                text[header].append(why)
            elif kind == "effectiveness":
                values[header].append(fmt.effectiveness_value(v))
                text[header].append(fmt.effectiveness(v))
            else:
                values[header].append(v)
                text[header].append(getattr(fmt, kind)(v))
        for header, system in ((headers[-2], s), (headers[-1], fused_prefix + s)):
            if header == headers[-1] and system not in set(frame["system"]):
                values[header].append(math.nan)
                text[header].append("no fusion" if s != "bm25" else "n/a")
                continue
            v, why = group_mean(rows, "beir-13", system, "nDCG@10", notes)
            values[header].append(fmt.effectiveness_value(v) if not math.isnan(v) else math.nan)
            text[header].append(fmt.effectiveness(v) if not math.isnan(v) else why)
    best = {h: best_cells(values[h], text[h], better[h]) for h in headers}
    if any(any(b) for b in best.values()):
        notes.best = "bold: the best number of its column (highest effectiveness, lowest latency)"
    settings = _engine_settings(frame, systems)
    lead = [_unit_note(fmt), EFFICIENCY_PROTOCOL,
            "DL19 nDCG@10: our addition (the paper reports no TREC DL column); BM25 on Anserini is timed whole (no "
            "PISA retrieval column): its latency is in the efficiency table",
            "BEIR-13 mean: over all 13 datasets, else n/a (n of 13); fused: reciprocal rank fusion with BM25 (the "
            f"{fused_prefix}<model> row of the benchmark)",
            *([f"engine settings: {settings}"] if settings else []),
            EFFICIENCY_PUBLISHED]
    labels = pd.DataFrame({"model": systems})
    training = _training_labels(frame, systems, runs or {})
    if any(training):
        labels["training"] = training
        lead.append("training: the document regulariser's weight lambda_d as configured and, where the run used "
                    "naver's sum (naver/splade's trainer adds FLOPS twice), the weight the loss used; where the "
                    "run's middle-trained encoders came from (docs/efficiency-paper.md)")
    return _table(name, "Efficient SPLADE: MS MARCO dev effectiveness and latency, BEIR-13 alone and fused",
                  labels, values, text, lead + notes.lines(), best)


def _engine_settings(frame: pd.DataFrame, systems: Sequence[str]) -> str:
    """The engines the rows name, with their systems (``pisa: a, b``)."""
    if "engine" not in frame.columns:
        return ""
    by: dict[str, list[str]] = {}
    for s in systems:
        engines = [e for e in frame.loc[frame["system"] == s, "engine"].fillna("") if e]
        if engines:
            by.setdefault(engines[0], []).append(s)
    return "; ".join(f"{e}: {', '.join(s)}" for e, s in by.items())
