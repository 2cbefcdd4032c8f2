"""D4's and D5's figures and the page's tables (studies/msmarco_scale/README.md, D4 and D5), made from the committed
``engines.json`` and ``d5.json`` only: lsr-eval's report module draws each figure and writes its ``figure.csv``.

    python studies/msmarco_scale/report.py results/studies/msmarco-scale-engines
    python studies/msmarco_scale/report.py results/studies/msmarco-scale-engines \
        --d5 results/studies/msmarco-scale-8.8m-engines
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd

QUERY_SETTINGS = {"q256": "256-term queries", "q32": "32-term queries"}
EXACT = {("pisa", "exact"), ("anserini", "exact"), ("bmp", "safe")}
LABEL = "real queries, generated documents"


def frame(doc: dict[str, Any]) -> pd.DataFrame:
    """One row per size, engine, setting, query setting and k, as lsr_eval.report.scaling draws them."""
    return pd.DataFrame([{"documents": r["size"], "engine": r["engine"], "setting": r["setting"],
                          "queries": QUERY_SETTINGS[r["qset"]], "k": r["k"],
                          "latency_mean_ms": r["latency_ms"]["mean"], "recall_at_10": r.get("recall_at_10"),
                          "recall_at_1000": r.get("recall_at_1000")} for r in doc["rows"]])


def figures(doc: dict[str, Any], folder: Path) -> dict[str, pd.DataFrame]:
    """Both figures written under ``folder/figures/``; returns each figure's drawn rows by name."""
    from lsr_eval.report.scaling import latency_by_size, recall_by_latency, write_figure

    data = frame(doc)
    drawn = {}
    fig, drawn["latency-by-size"] = latency_by_size(data, f"Mean latency against collection size ({LABEL})")
    write_figure(fig, drawn["latency-by-size"], folder / "figures" / "latency-by-size")
    largest = int(data["documents"].max())
    approx = data[[(e, s) not in EXACT for e, s in zip(data["engine"], data["setting"])]]
    name = f"recall-latency-{largest}"
    for old in (folder / "figures").glob("recall-latency-*"):   # drawn at a smaller largest size before
        if old.name != name:
            shutil.rmtree(old)
    fig, drawn[name] = recall_by_latency(approx, largest, 10, f"Recall@10 against mean latency at {largest:,} "
                                                              f"documents\n({LABEL})")
    write_figure(fig, drawn[name], folder / "figures" / name)
    return drawn


def _ms_recall(row: pd.Series | None, k: int) -> str:
    if row is None:
        return ""
    recall = row.get(f"recall_at_{k}")
    return f"{row['latency_mean_ms']:.2f}" + ("" if pd.isna(recall) else f" ({recall:.3f})")


def tables_md(doc: dict[str, Any]) -> str:
    """The page's table: mean latency (ms) and, for every engine but PISA, recall@k in brackets, per size, engine
    and setting, for each query setting and k."""
    data = frame(doc)
    columns = [("256-term queries", 10), ("256-term queries", 1000), ("32-term queries", 10)]
    lines = ["| documents | engine | setting | 256 terms, k=10: ms (recall) | 256 terms, k=1000: ms (recall) | "
             "32 terms, k=10: ms (recall) |", "|---|---|---|---|---|---|"]
    for (n, engine, setting), group in data.groupby(["documents", "engine", "setting"], sort=False):
        cells = []
        for q, k in columns:
            hit = group[(group["queries"] == q) & (group["k"] == k)]
            cells.append(_ms_recall(None if hit.empty else hit.iloc[0], k))
        lines.append(f"| {n:,} | {engine} | {setting} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def predictions_md(doc: dict[str, Any], full: dict[str, Any]) -> str:
    """Seismic's and BMP's models (fitted at 10k-1M, checked at 2M) applied to D2's 8.8M collection: what they predict
    its stages need, the 2M check's error beside each."""
    postings = next(r["postings"] for r in full["rows"] if r["stage"] == "generate")
    lines = [f"| engine / stage / value | predicted at {full['size']:,} documents ({postings:,} postings) | "
             "error at the 2M check |", "|---|---|---|"]
    for name, m in doc["models"].items():
        value = m["fixed"] + m["per_million_postings"] * postings / 1e6
        unit = "GiB" if name.endswith("peak_rss_mb") else "s"
        shown = f"{value / 1024:,.2f} GiB" if unit == "GiB" else f"{value:,.0f} s"
        error = f"{100 * m['error']:+.1f}%" if "error" in m else "not measured"
        lines.append(f"| {name} | {shown} | {error} |")
    return "\n".join(lines) + "\n"


def d5_frame(d4: dict[str, Any], d5: dict[str, Any]) -> pd.DataFrame:
    """D4's 256-term rows and D5's (its 1,000 queries; not the 6,980), as :func:`frame` makes them."""
    rows = [r for r in d4["rows"] if r["qset"] == "q256"] + [r for r in d5["rows"] if r["qset"] == "q256"]
    return frame({"rows": rows})


def d5_figure(d4: dict[str, Any], d5: dict[str, Any], folder: Path) -> pd.DataFrame:
    """D4's latency-by-size figure extended with D5's sizes, under ``folder/figures/latency-by-size``."""
    from lsr_eval.report.scaling import latency_by_size, write_figure

    fig, drawn = latency_by_size(d5_frame(d4, d5), "Mean latency against collection size, 256-term queries, up to "
                                 f"{max(r['size'] for r in d5['rows']):,} documents\n({LABEL}; Seismic tuned: "
                                 "per size to 2M, 2M's setting beyond)")
    write_figure(fig, drawn, folder / "figures" / "latency-by-size")
    return drawn


def d5_tables_md(d5: dict[str, Any]) -> str:
    """The page's D5 table (mean ms and recall@k per size, engine and setting; the build) and the refusals."""
    lines = ["| documents | engine | setting | k=10: ms (recall) | k=1000: ms (recall) | all 6,980, k=10: ms | "
             "build (s) | build peak RSS (GiB) | on disk (GiB) |", "|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[int, str, str], dict[str, Any]] = {}
    for r in d5["rows"]:
        groups.setdefault((r["size"], r["engine"], r["setting"]), {})[f"{r['qset']}/{r['k']}"] = r
    for (n, engine, setting), got in groups.items():
        cells = []
        for key in ("q256/10", "q256/1000", "all/10"):
            r = got.get(key)
            rec = None if r is None else r.get(f"recall_at_{r['k']}")
            cells.append("" if r is None else f"{r['latency_ms']['mean']:.2f}"
                         + ("" if rec is None or key.startswith("all") else f" ({rec:.3f})"))
        first = next(iter(got.values()))
        build = [first["index_seconds"], first["index_peak_rss_bytes"], first["index_bytes"]]
        cells += ["" if build[0] is None else f"{build[0]:,.0f}",
                  *("" if v is None else f"{v / 2**30:.2f}" for v in build[1:])]
        lines.append(f"| {n:,} | {engine} | {setting} | {' | '.join(cells)} |")
    lines += ["", "Refused before starting (the plan's rule):", ""]
    lines += [f"- {r['engine']} {r['stage']} at {r['size']:,}: {r['refused']}" for r in d5["plan"]["rows"]
              if r["refused"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", help="the result folder (engines.json)")
    p.add_argument("--full", default="results/studies/msmarco-scale-8.8m/full.json", help="D2's full.json (8.8M)")
    p.add_argument("--d5", help="D5's result folder (d5.json): draw its figure and write its tables.md instead")
    args = p.parse_args(argv)
    folder = Path(args.folder)
    doc = json.loads((folder / "engines.json").read_text())
    if args.d5:
        d5_folder = Path(args.d5)
        d5 = json.loads((d5_folder / "d5.json").read_text())
        d5_figure(doc, d5, d5_folder)
        (d5_folder / "tables.md").write_text(d5_tables_md(d5))
        print((d5_folder / "tables.md").read_text())
        return 0
    figures(doc, folder)
    full = json.loads(Path(args.full).read_text())
    (folder / "tables.md").write_text(tables_md(doc) + "\n" + predictions_md(doc, full))
    print((folder / "tables.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
