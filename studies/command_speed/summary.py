"""The command wall-time benchmark's summary (studies/command_speed/run.py), which
tests/integration/test_committed_results.py makes again from a committed ``results.json``."""

from __future__ import annotations

import json
from pathlib import Path


def markdown(rows: dict, repeats: int, load: tuple[float, float, float]) -> str:
    """The summary table."""
    lines = [f"# Command wall times (median of {repeats}, interleaved; load average before: "
             f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f})", "",
             "| command | before (s) | after (s) | speed-up | target (s) | meets target | same numbers |",
             "|---|---:|---:|---:|---:|---|---|"]
    for name, r in rows.items():
        med = r["median_s"]
        lines.append(f"| `lsr-eval {name if name != 'help' else '--help'}` | {med.get('before', float('nan')):.3f} | "
                     f"{med.get('after', float('nan')):.3f} | {r['speedup']} | {r['target_s']} | "
                     f"{'yes' if r['meets_target'] else 'no'} | "
                     f"{ {True: 'yes', False: 'no', None: 'n/a'}[r['same_output']]} |")
    return "\n".join(lines) + "\n"


def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of studies/command_speed/run.py, made again from its ``results.json`` (what
    tests/integration/test_committed_results.py compares with the committed one)."""
    r = json.loads((Path(folder) / "results.json").read_text(encoding="utf-8"))
    return {"summary.md": markdown(r["rows"], r["repeats"], tuple(r["load_average_before"]))}
