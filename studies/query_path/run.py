"""Side-by-side benchmark of the SPLADE query path, in one run, on one CPU thread: lsr-eval's
(:class:`SpladeEncoder` -> integer weight map -> :class:`ImpactSearcher.search`) against Pyserini's own
(``SpladeQueryEncoder`` inside ``LuceneImpactSearcher.search``), on the same impact index and the same weights;
plus expected FLOPs, posting-list statistics and the single-thread latency report (BM25 for reference).

    python studies/query_path/run.py --reuse /tmp/work      # SciFact test, offline MiniLM, top-128 / top-32

Pyserini's classes come from :mod:`lsr_eval.anserini.pyserini_modules`, which sets a dummy ``OPENAI_API_KEY``
(``pyserini.encode`` builds an OpenAI client at import) and starts lsr-eval's JVM first, so that pyserini finds it
running with lsr-eval's options; the index's document frequencies come from
:class:`lsr_eval.anserini.term_stats.TermStats`.

Pyserini paths (``LuceneImpactSearcher`` with a ``SpladeQueryEncoder`` built on a folder saved by
``SpladeModel.save_pretrained``), and what differs from lsr-eval's:

* ``pyserini``: the encoder as Pyserini loads it (``AutoModelForMaskedLM``). The identity head's bypassed activation
  is not a transformers option, so BERT's GELU is back in the head: different vectors (see docs/models.md).
* ``pyserini-same-weights``: the same encoder object with its ``model`` replaced by lsr-eval's loaded query model
  (bypass kept): identical float vectors, so differences come from the rest of the path.
* Both get lsr-eval's query sparsification (special tokens dropped, top-k) applied to their float weights just before
  Pyserini's own term-dict building and quantisation (a subclass hook): Pyserini applies none, and the untrained
  head activates ~30k terms per query, over Lucene's 1024-clause limit (counted below, not searched).
* Pyserini quantises queries as ``round(w / 5 * 256)`` (scale 51.2), lsr-eval as ``rint(w * 100)``; Pyserini drops
  query terms absent from the index (or in every document); it tokenises with ``max_length=256`` (lsr-eval: 64; no
  SciFact query is that long); it runs the model without ``torch.inference_mode``, builds the id -> term table
  (30k entries) at every query, and returns Java hits unread, whereas ``ImpactSearcher.search`` reads the k hits
  into Python: Pyserini's time to read them is measured apart ("read") and added for the like-for-like ratio.

The paths run interleaved, query by query, the order rotating at each query, so machine load drifts evenly over
them (:func:`studies.harness.measure.run_interleaved`). Ratios are Pyserini / lsr-eval (above 1: lsr-eval is
faster). lsr-eval's time per part (tokenizer, session runs, candidate selection, sparsification, weight map,
search) is measured in the same run and tabulated (:func:`studies.query_path.measure.part_breakdown`).
"""

from __future__ import annotations

import json
import logging
import sys
import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from studies.query_path.measure import STAGE, parse_args, run_query_path
from studies.query_path.summary import summary_md, write_per_query


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__.split("\n\n")[0])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    run = run_query_path(args)
    from lsr_eval.anserini.jvm import info as java_info
    from lsr_eval.manifest import write_manifest
    from lsr_eval.pipeline.splade import settings_record

    out, bench = run.out, run.bench
    with open(out / "bench.json", "w", encoding="utf-8") as f:
        json.dump(bench, f, indent=2)
        f.write("\n")
    write_per_query(out / "per_query.csv", run.queries, run.results, run.agreement, args.warmup)
    (out / "summary.md").write_text(summary_md(bench), encoding="utf-8")
    write_manifest(out, STAGE, run.experiment, settings=settings_record(run.settings), inference=run.inference,
                   artefacts=bench["artefacts"],
                   outputs=["bench.json", "per_query.csv", "summary.md"], java=java_info(),
                   seconds=bench["seconds"])
    print(summary_md(bench))
    return 0


if __name__ == "__main__":
    sys.exit(main())
