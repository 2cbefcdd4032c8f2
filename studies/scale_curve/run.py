"""Scale curve: synthetic collections of growing size through export -> index -> search -> evaluate on each engine,
with the wall time and peak memory of every stage, a linear fit per stage and its extrapolation to MS MARCO.

    nice -n 5 python studies/scale_curve/run.py --out work/bench-scale-dev                      # 10k, 100k, 1M
    nice -n 5 python studies/scale_curve/run.py --sizes 10000 100000 --engines anserini pisa --out work/bench-scale-dev

Data (no model): a vocabulary of ``--vocab`` terms named ``t00000``...; a document has a log-normal number of active
terms around ``--doc-terms`` (SPLADE-like), drawn without replacement from a Zipf law of exponent ``--zipf`` over the
vocabulary, each with an integer impact in 1..255 (log-normal); documents are generated ``--chunk`` at a time (memory
bounded: a 1M collection is never held whole) from a seed per chunk, so a smaller collection is a prefix of a larger
one. ``--queries`` queries of about ``--query-terms`` terms: each is planted on one random document of the
collection (``--plant-terms`` of that document's terms, the rest Zipf), and the qrels judge that document relevant,
so that evaluation measures something; the point is the cost, not the value.

Stages, per collection size (every (size, engine) runs in a fresh subprocess, so that peak memory is its own):

* ``export``: the synthetic vectors generated and written as a ``JsonVectorCollection`` folder (``.jsonl`` files of
  at most ``--file-docs`` documents, orjson when installed), with the queries and qrels. Shared by the engines: done
  once per size (row engine ``shared``), and reused from ``--work-dir`` when the same data was made before (its
  recorded timing is then reported, marked ``reused``; ``--regenerate`` makes it again).
* ``index``: ``Engine.build(collection, index, threads)``; docs/s and the index's bytes on disk.
* ``search``: ``Engine.open`` + ``Searcher.batch_search(queries, k, threads)`` + close (open seconds recorded apart);
  the run's digests (per query: its hits with their scores, and its docid set) let the parent check that every
  exact engine returns the reference engine's run (``exact_engines`` in ``results.json``; a difference fails the
  invocation).
* ``evaluate``: :func:`lsr_eval.evaluation.evaluate` of the run against the planted qrels (default measures).

Memory per stage: the process's peak resident memory (``VmHWM``, reset at each stage start through
``/proc/self/clear_refs``, and sampled every ``--sample-interval`` seconds from a thread; for Anserini the JVM lives in
the process, so this includes it), and for Anserini the JVM heap in use (``Runtime`` total - free and the
``MemoryMXBean``'s used heap, sampled), its committed peak and its maximum (``-Xmx``).

Budget: before a size, each engine's seconds and peak memory are predicted linearly from its smaller sizes (the line
through the two largest; from a single size, scaled by the size ratio: see :func:`studies.scale_curve.scaling.predict`);
a run predicted over ``--budget-minutes`` or over ``--mem-fraction`` of the available memory is skipped and recorded as
such (``--force`` runs it anyway); a run over ``--timeout-minutes`` is stopped and recorded as a timeout; with
``--session-budget-minutes``, a run predicted to overrun what is left of that budget for the whole invocation is skipped
too. An engine that fails records the failure (rows with status ``failed``) and the others go on. ``--reuse-runs`` takes
a finished (size, engine) run from ``--work-dir/runs`` made with the same data and settings instead of running it again
(its rows say so), so a curve can be completed in several invocations; the record for ``results/scale`` is made in one
invocation without it.

Linearity: every stage's wall seconds and CPU seconds (the process's, all threads: JVM and native libraries
included; less disturbed than wall time by other jobs on a shared machine, whose load is recorded per row) are
fitted against documents. Evaluation and the per-query overheads of search do not grow with the collection (1,000
queries x k hits), so small sizes are dominated by fixed costs; the marginal cost (the slope between the two largest
sizes) gives the extrapolation.

Outputs in ``--out``: ``table.csv`` (one row per size x engine x stage), ``results.json`` (rows, counts, per-stage
linear fits with the extrapolation to 8,841,823 MS MARCO passages and the linearity checks, what was skipped and
why), ``scale.png`` (log-log seconds and peak memory per stage vs documents) and ``manifest.json``. Generated data,
indexes and per-run records go to ``--work-dir`` (indexes are deleted after measuring unless ``--keep-indexes``).
"""

from __future__ import annotations

import json
import logging
import sys
import sys as _sys
from pathlib import Path
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from lsr_eval.report.formatting import csv_text
from studies.scale_curve.child import error_text
from studies.scale_curve.curve import STAGE, child_exit, parse_args, run_curve
from studies.scale_curve.scaling import TABLE_FIELDS
from studies.scale_curve.summary import plot, summary_text

log = logging.getLogger("bench_scale")



def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__.split("\n\n")[0])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.one is not None:
        child_exit(args)
    from lsr_eval.manifest import write_manifest

    curve = run_curve(args, [sys.executable, str(Path(__file__).resolve())])
    out = curve.out
    with open(out / "results.json", "w", encoding="utf-8") as f:
        json.dump(curve.document, f, indent=2, default=str)
        f.write("\n")
    (out / "table.csv").write_bytes(csv_text(TABLE_FIELDS, curve.rows).encode("utf-8"))
    outputs = ["results.json", "table.csv"]
    try:
        plot(curve.results, out / "scale.png")
        outputs.append("scale.png")
    except Exception as e:  # noqa: BLE001 - the table matters more than the figure
        log.error("plot failed: %s", error_text(e))
    write_manifest(out, STAGE, curve.experiment, **curve.manifest_fields(), outputs=outputs)
    print(summary_text(curve.rows, curve.fit))
    for c in curve.exact:
        print(f"{c['docs']} documents: {c['engine']} vs {c['reference']}: identical runs on "
              f"{c['identical_queries']}/{c['queries']} queries (same docid sets on {c['same_docid_set_queries']})"
              + ("" if c["identical"] else f"; differing: {', '.join(c['differing_queries'])}"))
    if curve.skipped:
        print("\nskipped:\n" + "\n".join(f"  {s['docs']} {s['engine']}: {s['why']}" for s in curve.skipped))
    if curve.failed:
        print("\nfailed:\n" + "\n".join(f"  {s['docs']} {s['engine']} {s['stage']}: {s['why']}"
                                         for s in curve.failed))
    return 0 if not curve.failed and all(c["identical"] for c in curve.exact) else 1


if __name__ == "__main__":
    sys.exit(main())
