"""The collection check's cost beside Anserini's index build (studies/vector_check/run.py): its summary, which
tests/integration/test_committed_results.py makes again from a committed ``results.json``."""

from __future__ import annotations

import json
from pathlib import Path


def markdown(r: dict) -> str:
    """The summary: medians, the ratio and the limit, the load the machine was under."""
    med, c = r["median_s"], r["collection"]
    load = r["load_average_before"]
    after = r["load_average_after"]
    lines = [f"# The collection check beside Anserini's impact index build ({r['repeats']} pairs, alternating)", "",
             f"Collection: {c['documents']:,} documents, {c['postings']:,} postings, {c['files']} file(s), "
             f"{c['bytes']:,} bytes ({c['name']}).", "",
             "| what | median (s) | min (s) | max (s) |", "|---|---:|---:|---:|"]
    for name, label in (("anserini", "Anserini's index build (`AnseriniEngine.build`, threads "
                                      f"{r['threads']}, JVM warm)"),
                        ("check", "the check alone (`check_collection`, one thread)")):
        s = r["samples_s"][name]
        lines.append(f"| {label} | {med[name]:.3f} | {min(s):.3f} | {max(s):.3f} |")
    lines += ["", f"**Check / index build: {r['ratio']:.1%}** (medians; median of the per-pair ratios "
                  f"{r['ratio_of_pairs']:.1%}); the limit is {r['limit']:.0%}: "
                  f"{'within' if r['ratio'] <= r['limit'] else 'ABOVE'} it.", "",
              f"Peak Python memory of the check (tracemalloc, one untimed pass): {r['check_heap_peak_bytes']:,} bytes "
              f"({r['check_heap_peak_bytes'] / c['documents']:.0f} per document; the collection is "
              f"{c['bytes']:,} bytes).", "",
              f"Load average (1, 5, 15 min) before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; after: "
              f"{after[0]:.2f} {after[1]:.2f} {after[2]:.2f} on {r['cores']} cores. {r['load_average_note']}"]
    return "\n".join(lines) + "\n"


def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of studies/vector_check/run.py, made again from its ``results.json``."""
    r = json.loads((Path(folder) / "results.json").read_text(encoding="utf-8"))
    return {"summary.md": markdown(r)}
