"""The collection check's cost beside Anserini's index build, side by side in one run.

Every engine's build first reads the whole ``JsonVectorCollection`` once through
:func:`lsr_eval.export.collection.check_collection` (docs/collections.md); the check must cost at most 10% of
Anserini's impact index build. On one collection (SciFact's splade-tiny export), this times Anserini's own build
(``AnseriniEngine.build``, the engine without the check, JVM warm after an untimed build) and the check alone,
alternating which goes first within each repeat so that a change of machine load hits both, and reports the ratio
of the medians (and the median of the per-pair ratios), the check's peak Python memory (tracemalloc, one untimed
pass) and the load average. Writes ``summary.md``, ``results.json`` and ``manifest.json`` to ``--out``.

    # SciFact's splade-tiny export, e.g. from a reproduction's cache
    # (lsr-eval reproduce results/benchmarks/scifact-splade-tiny --work-dir work/cache):
    python studies/vector_check/run.py --collection work/cache/collections/splade-tiny-*/docs --out results/vector-check
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from studies.vector_check.summary import markdown

REPO = Path(__file__).resolve().parents[2]
#: the check may cost at most this fraction of Anserini's index build
LIMIT = 0.10


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(collection: Path, repeats: int, warmup: int, threads: int, scratch: Path) -> dict[str, list[float]]:
    """``warmup`` untimed pairs, then ``repeats`` timed ones, the order alternating: seconds per side."""
    from lsr_eval.engines.anserini import AnseriniEngine
    from lsr_eval.export.collection import JAVA_INT, check_collection

    def index() -> None:
        folder = scratch / "index"
        AnseriniEngine().build(collection, folder, threads=threads)
        shutil.rmtree(folder)

    sides = {"anserini": index, "check": lambda: check_collection(collection, JAVA_INT)}
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for i in range(warmup + repeats):
        for name in (list(sides) if i % 2 == 0 else list(reversed(sides))):
            seconds = _timed(sides[name])
            if i >= warmup:
                samples[name].append(round(seconds, 4))
    return samples


def check_peak(collection: Path) -> tuple[int, dict]:
    """The check's peak Python memory over one pass (bytes), and its counts; an untimed, untraced pass first (a bad
    collection stops there; the imports it makes are not the check's memory)."""
    from lsr_eval.export.collection import JAVA_INT, check_collection

    check_collection(collection, JAVA_INT)
    tracemalloc.start()
    try:
        counts = check_collection(collection, JAVA_INT)
        return tracemalloc.get_traced_memory()[1], counts.to_dict()
    finally:
        tracemalloc.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--collection", type=Path, required=True, help="a JsonVectorCollection folder (an export's docs/)")
    p.add_argument("--repeats", type=int, default=5, help="timed pairs (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed pairs first (JVM, file cache; default 1)")
    p.add_argument("--threads", type=int, default=2, help="Anserini's indexing threads (default 2)")
    p.add_argument("--out", type=Path, default=REPO / "results" / "vector-check", help="output folder")
    args = p.parse_args(argv)
    if args.repeats < 1 or args.warmup < 0 or args.threads < 1:
        p.error("--repeats and --threads must be >= 1, --warmup >= 0")
    collection = args.collection.resolve()
    if not collection.is_dir():
        p.error(f"{collection} is not a folder")
    from lsr_eval.errors import InputError
    from lsr_eval.manifest import check_provenance, read_manifest, write_manifest

    check_provenance(args.out)  # before minutes of measuring
    try:
        peak, counts = check_peak(collection)  # untimed: a bad collection stops here, before any index is built
    except InputError as e:
        sys.exit(f"vector_check: {e}")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="vector-check-") as scratch:
        samples = measure(collection, args.repeats, args.warmup, args.threads, Path(scratch))
    median = {name: statistics.median(s) for name, s in samples.items()}
    ratio = median["check"] / median["anserini"]
    export = read_manifest(collection.parent) or {}
    shared = load[0] > 0.5 * (os.cpu_count() or 1)
    results = {
        "collection": {"name": f"{collection.parent.name}/{collection.name}", **counts,
                       "bytes": sum(f.stat().st_size for f in collection.iterdir() if f.is_file())},
        "repeats": args.repeats, "warmup": args.warmup, "threads": args.threads, "cores": os.cpu_count(),
        "samples_s": samples, "median_s": median, "ratio": round(ratio, 4),
        "ratio_of_pairs": round(statistics.median(c / a for c, a in zip(samples["check"], samples["anserini"])), 4),
        "limit": LIMIT, "within_limit": ratio <= LIMIT, "check_heap_peak_bytes": peak,
        "load_average_before": list(load), "load_average_after": list(os.getloadavg()),
        "load_average_note": ("The CPUs were shared with other processes (load average above half the cores): both "
                              "sides were slowed, alternately; the ratio is the figure to read, not the seconds."
                              if shared else "The CPUs were not otherwise busy."),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (args.out / "summary.md").write_text(markdown(results), encoding="utf-8")
    write_manifest(args.out, "bench-vector-check",
                   {"bench": "vector-check", "collection": str(collection), "export": export.get("experiment"),
                    "repeats": args.repeats, "warmup": args.warmup, "threads": args.threads},
                   outputs=["summary.md", "results.json"])
    print(markdown(results), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
