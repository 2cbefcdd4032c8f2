"""The exact-engines check's summary (studies/exact_engines/run.py), which tests/integration/test_committed_results.py
makes again from a committed ``engines.json``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

#: the engines checked against Anserini, and their names in the summary
ENGINES = {"pisa": "PISA", "bmp": "BMP"}


def summary_text(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    engines = [e for e in ENGINES if any(e in r["differing_from_anserini"] for r in results.values())]
    pisa = "pisa" in engines
    head = [f"{ENGINES[e]} {how} identical" for e in engines for how in ("batch", "one by one")]
    head += ["Anserini's own SimpleImpactSearcher identical"]
    head += ["PISA before the fix (integer scores) differing"] * pisa + ["queries with a residue", "tied neighbours"]
    lines = [f"# The same run from every exact engine: {args.model}, {args.precision}, documents top-"
             f"{args.doc_top_k} terms, queries top-{args.query_top_k}, top {args.k}", "",
             "Identical = the same `(docid, score)` list, in order, bit for bit (float32 scores), as lsr-eval's "
             "Anserini path.", "",
             "| dataset | queries | hits | " + " | ".join(head) + " |",
             "|---|---|---|" + "---|" * len(head)]
    for name, r in results.items():
        d, q = r["differing_from_anserini"], r["queries"]
        same = lambda run: f"{q - len(d[run])}/{q}" if run in d else "-"  # noqa: E731
        cells = [same(f"{e}{how}") for e in engines for how in ("", "_one_by_one")] + [same("anserini_java")]
        if pisa:
            cells.append(f"{r['before_fix']['differing']} ({', '.join(r['before_fix']['qids']) or 'none'})")
        cells += [f"{r['residue']['queries']} ({r['residue']['hits']} hits)", str(r["tied_neighbours"])]
        lines.append(f"| {name} | {q} | {r['hits']['anserini']} | " + " | ".join(cells) + " |")
    lines.append("")
    for name, r in results.items():
        ex = r["residue"]["example"]
        if ex:
            lines.append(f"{name}: e.g. {ex['qid']} rank {ex['rank']}: {ex['docid']} at {ex['score']!r} "
                         f"(exact dot product {round(ex['score'])}).")
    lines.append("")
    return "\n".join(lines)


def summaries(folder: Path) -> dict[str, str]:
    """``summary.md`` made again from a results folder's raw file (``engines.json``) and the settings its manifest
    recorded: what tests/integration/test_committed_results.py compares with the committed one."""
    experiment = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["experiment"]
    results = json.loads((folder / "engines.json").read_text(encoding="utf-8"))
    return {"summary.md": summary_text(results, argparse.Namespace(**experiment))}
