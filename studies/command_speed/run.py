"""How long `lsr-eval evaluate`, `lsr-eval fuse` and `lsr-eval --help` take, before and after a change, side by side.

Each command runs as a fresh subprocess (``python -m lsr_eval.cli``, so that interpreter start and imports count,
as for a user) with ``PYTHONPATH`` at one checkout or the other; the two checkouts alternate within each repeat
(interleaved, so that a change of machine load hits both), and the median wall time of the repeats is reported.
The published DL19 runs (``../shared/data/msmarco-passage``) are the inputs. Writes ``summary.md``,
``results.json`` and ``manifest.json`` to ``--out``.

    git worktree add /tmp/base a2b8326
    python studies/command_speed/run.py --before /tmp/base --after . --repeats 7 --out results/commands
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sys as _sys
import tempfile
import time
from pathlib import Path
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from studies.command_speed.summary import markdown

REPO = Path(__file__).resolve().parents[2]
#: Targets of the commands (seconds of wall time).
TARGETS = {"evaluate": 1.0, "fuse": 1.5, "help": 0.5}


def commands(data: Path, scratch: Path) -> dict[str, list[str]]:
    """The measured command lines (after ``python -m lsr_eval.cli``)."""
    runs = data / "runs"
    qrels = str(data / "qrels.dl19-passage.txt")
    return {"evaluate": ["evaluate", qrels, str(runs / "dl19.bm25-flat.top100.trec")],
            "fuse": ["fuse", str(runs / "dl19.bm25-flat.top100.trec"), str(runs / "dl19.splade-pp-ed.top100.trec"),
                     "--qrels", qrels, "--out", str(scratch / "fused.trec"), "--overwrite"],
            "help": ["--help"]}


def timed(checkout: Path, argv: list[str]) -> tuple[float, str]:
    """Wall seconds of one run of ``argv`` against ``checkout``, and its standard output (checked: exit 0)."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "lsr_eval.cli", *argv], cwd=checkout, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"bench_commands: {' '.join(argv[:1])} failed in {checkout} (exit {done.returncode}): "
                 f"{done.stderr.strip().splitlines()[-1:] or ''}")
    return seconds, done.stdout


def _metric_lines(stdout: str) -> list[str]:
    """The lines of a command's output that hold numbers (the tables), for the before/after comparison."""
    return [line for line in stdout.splitlines() if any(c.isdigit() for c in line) and "->" not in line]


def measure(checkouts: dict[str, Path], cmds: dict[str, list[str]], repeats: int, warmup: int) -> dict:
    """Every command on every checkout, interleaved, ``warmup`` untimed runs then ``repeats`` timed ones."""
    samples: dict[str, dict[str, list[float]]] = {c: {k: [] for k in checkouts} for c in cmds}
    outputs: dict[str, dict[str, list[str]]] = {c: {} for c in cmds}
    for i in range(warmup + repeats):
        for name, argv in cmds.items():
            order = list(checkouts) if i % 2 == 0 else list(reversed(checkouts))
            for label in order:
                seconds, stdout = timed(checkouts[label], argv)
                outputs[name][label] = _metric_lines(stdout)
                if i >= warmup:
                    samples[name][label].append(round(seconds, 4))
    return {"samples": samples, "outputs": outputs}


def summarise(measured: dict, checkouts: dict[str, Path]) -> dict:
    """Median (and min, max) per command and checkout, the speed-up, the target, and whether the outputs agree."""
    rows = {}
    for name, by_label in measured["samples"].items():
        med = {label: statistics.median(s) for label, s in by_label.items()}
        before, after = med.get("before"), med.get("after")
        outs = measured["outputs"][name]
        rows[name] = {"median_s": med, "min_s": {k: min(s) for k, s in by_label.items()},
                      "max_s": {k: max(s) for k, s in by_label.items()}, "target_s": TARGETS[name],
                      "speedup": round(before / after, 2) if before and after else None,
                      "meets_target": after is not None and after < TARGETS[name],
                      # --help prints no numbers (and lists whatever commands each checkout has)
                      "same_output": None if name == "help" else len({tuple(o) for o in outs.values()}) == 1}
    return rows


def _commit(checkout: Path) -> str | None:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", type=Path, required=True, help="checkout of the old code (e.g. a git worktree)")
    p.add_argument("--after", type=Path, default=REPO, help="checkout of the new code (default: this one)")
    p.add_argument("--data", type=Path, default=Path(os.environ.get("LSR_EVAL_SHARED_DATA", REPO.parent / "shared"
                                                                   / "data")) / "msmarco-passage",
                   help="folder of the DL19 qrels and runs (default ../shared/data/msmarco-passage)")
    p.add_argument("--repeats", type=int, default=7, help="timed runs per command and checkout (default 7)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs first (file cache, numba cache; default 1)")
    p.add_argument("--out", type=Path, default=REPO / "results" / "commands", help="output folder")
    args = p.parse_args(argv)
    if args.repeats < 1 or args.warmup < 0:
        p.error("--repeats must be >= 1 and --warmup >= 0")
    for folder in (args.before, args.after, args.data):
        if not folder.is_dir():
            p.error(f"{folder} is not a folder")
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        cmds = commands(args.data, Path(scratch))
        measured = measure(checkouts, cmds, args.repeats, args.warmup)
    rows = summarise(measured, checkouts)
    args.out.mkdir(parents=True, exist_ok=True)
    results = {"commands": {n: ["python", "-m", "lsr_eval.cli", *c] for n, c in cmds.items()}, "rows": rows,
               "samples": measured["samples"], "repeats": args.repeats, "load_average_before": list(load),
               "load_average_after": list(os.getloadavg())}
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (args.out / "summary.md").write_text(markdown(rows, args.repeats, load), encoding="utf-8")
    from lsr_eval.manifest import write_manifest

    write_manifest(args.out, "bench-commands", {"bench": "commands", "repeats": args.repeats, "warmup": args.warmup},
                   checkouts={k: {"path": str(v), "commit": _commit(v)} for k, v in checkouts.items()},
                   outputs=["summary.md", "results.json"])
    print(markdown(rows, args.repeats, load), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
