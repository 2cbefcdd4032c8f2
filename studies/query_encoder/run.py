"""Side-by-side single-query latency of the SPLADE query encoder on one thread: lsr-eval's torch path
(:meth:`SpladeEncoder.encode` on one text, the lean ``_encode_single`` path) against ONNX Runtime
(:class:`lsr_eval.models.onnx_query.OnnxQueryEncoder`, ``pruned`` and ``dense`` graphs), with fidelity of the integer
query vectors.

    python studies/query_encoder/run.py --out work/bench-qenc          # SciFact test, splade-tiny

Protocol: ``torch.set_num_threads(1)`` and ONNX Runtime sessions with one intra-op and one inter-op thread; the first
``--warmup`` queries are run on every path first (not counted); then ``--passes`` passes over all queries, the paths
interleaved query by query with the order rotating at each query, so machine load drifts evenly over them. Two
figures per path and query, both wall-clock (``time.perf_counter``) with the tokenizer included: ``encode`` (text ->
sparse float vector, ``encode([text], sparse=True)``) and ``weights`` (text -> ``{term: rint(w * scale)}``,
:class:`lsr_eval.efficiency.latency.QueryWeights`: what ``measure_latency`` reports as "encode"). The CPU time of the
calling thread (``time.thread_time``) is recorded beside wall time: other processes share the CPUs, and the gap
between the two is time spent waiting for a core. Per pass p50 / p99 over all queries; the summary gives the median
and the fastest of the passes' p50s. For the ONNX paths a separate pass splits the ``weights`` time into tokenizer,
session run(s), candidate selection (numpy) and the rest (sparsification, CSR row, quantisation, term map).
Fidelity: integer vectors of each ONNX path against the torch path on every query, differences listed with the torch
float weight times the scale (a difference at a rounding boundary shows as x.5000).
"""

from __future__ import annotations

import json
import logging
import sys
import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from studies.query_encoder.measure import STAGE, check_paths, measure_query_encoders, parse_args, write_per_query
from studies.query_encoder.summary import summary_md


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__.split("\n\n")[0])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    paths = check_paths(args)
    run = measure_query_encoders(args, paths)

    from lsr_eval.manifest import write_manifest

    out, bench = run.out, run.bench
    with open(out / "bench.json", "w", encoding="utf-8") as f:
        json.dump(bench, f, indent=2)
        f.write("\n")
    write_per_query(out / "per_query.csv", run)
    text = summary_md(bench)
    (out / "summary.md").write_text(text, encoding="utf-8")
    write_manifest(out, STAGE, run.experiment, versions=run.versions, export=run.export,
                   outputs=["bench.json", "per_query.csv", "summary.md"], seconds=bench["seconds"])
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
