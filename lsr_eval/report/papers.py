"""The two papers' own tables, made when the results hold their benchmark (by name).

- :func:`rescaling_paper_table` (benchmark :data:`RESCALING_BENCHMARK`; Jang et al., "Rescaling MLM-Head for Neural
  Sparse Retrieval", arXiv:2606.18811): backbones as rows, k as columns, each cell "MS MARCO dev RR@10 / DL19
  nDCG@10 / BEIR-13 mean nDCG@10"; the best k of each backbone (by dev RR@10) bold;
- :func:`efficiency_paper_table` (benchmark :data:`EFFICIENCY_BENCHMARK`; Lassance & Clinchant, "An Efficiency Study
  for SPLADE Models", arXiv:2207.03834): one row per model, MS MARCO dev RR@10 and R@1000, PISA retrieval and query
  encoding latency (p50), BEIR-13 mean nDCG@10 alone and fused with BM25 (the ``rrf-<model>`` row).

Each note quotes the paper's published figures, labelled "published", beside ours.
"""

from __future__ import annotations

import math
import re
from typing import Sequence

import pandas as pd

from lsr_eval.data.registry import GROUPS
from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.marks import ABSENT, CellNotes, best_cells, why_missing
from lsr_eval.report.table import Table
from lsr_eval.report.tables import _table, _unit_note

RESCALING_BENCHMARK = "paper-rescaling"
EFFICIENCY_BENCHMARK = "paper-efficient-splade"
#: A rescaling grid system's name (``rescale-<backbone>-k<k>``), for rows no training run is linked to.
RESCALE_NAME = re.compile(r"^rescale-(?P<backbone>.+)-k(?P<k>\d+(?:\.\d+)?)$")
#: The cell's parts: (dataset or group, measure).
RESCALING_PARTS = (("msmarco-dev", "RR@10"), ("dl19", "nDCG@10"), ("beir-13", "nDCG@10"))
#: The measure choosing each backbone's best k: MS MARCO dev, the model-selection set (never a test set).
SELECT_BY = ("msmarco-dev", "RR@10")
RESCALING_PUBLISHED = ("published (Jang et al., arXiv:2606.18811), BEIR-13 mean nDCG@10: ModernBERT 0.127 at k=1 and "
                       "0.405 at k=16; Ettin 0.221 at k=1 and 0.391 at k=16; BERT 0.370; RoBERTa best at k=2; "
                       "ALBERT collapses when rescaled")
EFFICIENCY_PUBLISHED = ("published (Lassance & Clinchant, arXiv:2207.03834; naver's model cards), MS MARCO dev "
                        "RR@10 / R@1000 / PISA retrieval latency + query encoding latency: V-large 38.8 / 98.0 / "
                        "29.0 ms + 45.3 ms; VI-BT-large 38.0 / 97.8 / 31.1 ms + 0.7 ms")
#: Prefix of a model's fusion with BM25 in the efficiency benchmark.
FUSED_PREFIX = "rrf-"


def _rows(frame: pd.DataFrame) -> dict[tuple[str, str], pd.Series]:
    return {(r["dataset"], r["system"]): r for _, r in frame.iterrows()}


def _value(rows: dict, dataset: str, system: str, measure: str, notes: CellNotes) -> tuple[float, str]:
    """(raw measure or NaN, why there is none) of ``system`` on ``dataset``."""
    row = rows.get((dataset, system))
    where = f"{dataset} / {system}"
    if row is None:
        notes.missing(ABSENT, "", where)
        return math.nan, ABSENT
    v = row.get(measure, math.nan)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        reason = why_missing(str(row["status"]))
        notes.missing(reason, str(row["status"]), where)
        return math.nan, reason
    return float(v), ""


def group_mean(rows: dict, group: str, system: str, measure: str, notes: CellNotes) -> tuple[float, str]:
    """(mean of ``measure`` over ``group``'s datasets, "") when all have a value, else (NaN, "n/a (n of N)")."""
    members = GROUPS[group]
    got = [_value(rows, d, system, measure, notes)[0] for d in members]
    have = [v for v in got if not math.isnan(v)]
    if len(have) == len(members):
        return math.fsum(have) / len(have), ""
    return math.nan, f"n/a ({len(have)} of {len(members)})"


def _part(rows: dict, dataset: str, system: str, measure: str, notes: CellNotes) -> tuple[float, str]:
    if dataset in GROUPS:
        return group_mean(rows, dataset, system, measure, notes)
    return _value(rows, dataset, system, measure, notes)


def _backbone_k(row: pd.Series) -> tuple[str, float] | None:
    """(backbone, k) of a grid row: from its name ``rescale-<backbone>-k<k>`` (the paper's names, whatever folder
    the model was trained from), else from its linked training run; None for rows without a k (BM25)."""
    m = RESCALE_NAME.match(str(row["system"]))
    if m:
        return m.group("backbone"), float(m.group("k"))
    k = row.get("k", math.nan)
    return (str(row.get("backbone", "") or row["system"]), float(k)) if not math.isnan(k) else None


def rescaling_paper_table(frame: pd.DataFrame, *, name: str = "paper-rescaling",
                          fmt: NumberFormat = NumberFormat()) -> Table:
    """Backbone x k of the rescaling benchmark's rows (``frame``, linked to training runs or not; see
    :func:`_backbone_k`); see the module doc."""
    rows = _rows(frame)
    grid: dict[str, dict[float, str]] = {}
    for _, r in frame.iterrows():
        bk = _backbone_k(r)
        if bk is not None:
            grid.setdefault(bk[0], {}).setdefault(bk[1], str(r["system"]))
    ks = sorted({k for cells in grid.values() for k in cells})
    headers = [f"k={k:g}" for k in ks]
    notes = CellNotes()
    values: dict[str, list[float]] = {h: [] for h in headers + ["best k"]}
    text: dict[str, list[str]] = {h: [] for h in headers + ["best k"]}
    best: dict[str, list[bool]] = {h: [] for h in headers + ["best k"]}
    for backbone, cells in grid.items():
        select: dict[float, float] = {}
        for k, h in zip(ks, headers):
            system = cells.get(k)
            if system is None:
                values[h].append(math.nan)
                text[h].append("not in the grid")
                continue
            parts = []
            for dataset, measure in RESCALING_PARTS:
                v, why = _part(rows, dataset, system, measure, notes)
                parts.append(fmt.effectiveness(v) if not math.isnan(v) else why)
                if (dataset, measure) == SELECT_BY and not math.isnan(v):
                    select[k] = v
            values[h].append(fmt.effectiveness_value(select[k]) if k in select else math.nan)
            text[h].append(" / ".join(parts))
        chosen = min((k for k, v in select.items() if v == max(select.values())), default=math.nan)
        for k, h in zip(ks, headers):
            best[h].append(k == chosen)
        values["best k"].append(chosen)
        text["best k"].append(f"{chosen:g}" if not math.isnan(chosen) else "n/a (no dev RR@10)")
        best["best k"].append(False)
    lead = [_unit_note(fmt),
            "each cell: MS MARCO dev RR@10 / DL19 nDCG@10 / BEIR-13 mean nDCG@10 (the mean only when all 13 "
            "datasets have a value, else n/a (n of 13)); a part without a number says why",
            "bold: each backbone's best k, chosen by MS MARCO dev RR@10 (the model-selection set; never by a test "
            "set: DL19 and BEIR-13 play no part in the choice; ties: the smaller k)",
            RESCALING_PUBLISHED]
    labels = pd.DataFrame({"backbone": list(grid)})
    return _table(name, "Rescaling MLM-head: backbone x k (dev RR@10 / DL19 nDCG@10 / BEIR-13 mean)", labels,
                  values, text, lead + notes.lines(), best)


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
    "queries; two rounds, each query's faster time; mean, p50 and p99 of retrieval, query encoding timed apart; "
    "'retrieval / BM25 on PISA' divides by the mean of BM25 on the same PISA settings in the same run (the paper's "
    "'within 4 ms of BM25 under the same computing constraints'). naver's: PISA's own C++ queries tool over the "
    "same index settings on their CPU (not stated), query encoding timed apart; hardware differs, so compare "
    "ratios, not milliseconds (docs/efficiency-paper.md)")


def efficiency_paper_table(frame: pd.DataFrame, *, name: str = "paper-efficient-splade",
                           fmt: NumberFormat = NumberFormat(), fused_prefix: str = FUSED_PREFIX) -> Table:
    """One row per model of the efficiency benchmark's rows (fusions ``rrf-<model>`` give the fused column, not a
    row of their own); see the module doc."""
    rows = _rows(frame)
    systems = [s for s in dict.fromkeys(frame["system"])
               if not (str(s).startswith(fused_prefix) and str(s)[len(fused_prefix):] in set(frame["system"]))]
    notes = CellNotes()
    headers = [c[0] for c in EFFICIENCY_PAPER_COLUMNS] + ["BEIR-13 mean nDCG@10", "BEIR-13 mean nDCG@10, RRF with BM25"]
    better = {c[0]: c[4] for c in EFFICIENCY_PAPER_COLUMNS} | {headers[-2]: "max", headers[-1]: "max"}
    values: dict[str, list[float]] = {h: [] for h in headers}
    text: dict[str, list[str]] = {h: [] for h in headers}
    for s in systems:
        for header, dataset, column, kind, _ in EFFICIENCY_PAPER_COLUMNS:
            v, why = _value(rows, dataset, s, column, notes)
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
    return _table(name, "Efficient SPLADE: MS MARCO dev effectiveness and latency, BEIR-13 alone and fused",
                  pd.DataFrame({"model": systems}), values, text, lead + notes.lines(), best)


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
