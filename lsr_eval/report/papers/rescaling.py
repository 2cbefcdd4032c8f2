"""The rescaling paper's own table (benchmark :data:`RESCALING_BENCHMARK`; Jang et al., "Rescaling MLM-Head for
Neural Sparse Retrieval", arXiv:2606.18811): backbones as rows, k as columns, each cell "MS MARCO dev RR@10 / DL19
nDCG@10 / BEIR-13 mean nDCG@10"; the best k of each backbone (by dev RR@10) bold. Its note quotes the paper's
published figures, labelled "published", beside ours."""

from __future__ import annotations

import math
import re

import pandas as pd

from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.marks import CellNotes
from lsr_eval.report.papers.cells import cell_part
from lsr_eval.report.table import Table
from lsr_eval.report.tables import _table, _unit_note, result_rows

RESCALING_BENCHMARK = "paper-rescaling"
#: A rescaling grid system's name (``rescale-<backbone>-k<k>``), for rows no training run is linked to.
RESCALE_NAME = re.compile(r"^rescale-(?P<backbone>.+)-k(?P<k>\d+(?:\.\d+)?)$")
#: The cell's parts: (dataset or group, measure).
RESCALING_PARTS = (("msmarco-dev", "RR@10"), ("dl19", "nDCG@10"), ("beir-13", "nDCG@10"))
#: The measure choosing each backbone's best k: MS MARCO dev, the model-selection set (never a test set).
SELECT_BY = ("msmarco-dev", "RR@10")
RESCALING_PUBLISHED = ("published (Jang et al., arXiv:2606.18811), BEIR-13 mean nDCG@10: ModernBERT 0.127 at k=1 and "
                       "0.405 at k=16; Ettin 0.221 at k=1 and 0.391 at k=16; BERT 0.370; RoBERTa best at k=2; "
                       "ALBERT collapses when rescaled")


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
    rows = result_rows(frame)
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
                v, why = cell_part(rows, dataset, system, measure, notes)
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
