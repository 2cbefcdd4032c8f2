"""Parity with Pyserini on the same weights: Pyserini's own SPLADE path against lsr-eval's, on
one benchmark's SPLADE system (default: ``pipelines/benchmarks/scifact-splade-tiny.yaml``, SciFact test, splade-tiny),
with every difference traced to a cause.

    python studies/pyserini_parity/run.py --work-dir /work/main/work      # -> results/parity-pyserini/

Pyserini path: ``pyserini.encode.SpladeDocumentEncoder`` encodes every document the way ``python -m pyserini.encode``
does (``JsonlCollectionIterator`` over ``corpus.jsonl`` with fields title and text, so the text is
``f"{title} {text}"``; ``JsonlRepresentationWriter`` writes the ``JsonVectorCollection``), with ``max_length`` set to
lsr-eval's document max length (256; Pyserini's CLI default is also 256) and batches of ``--py-batch-size``; Anserini
indexes it as an impact index (:func:`lsr_eval.anserini.indexer.build_index`); queries are searched by
``LuceneImpactSearcher`` with Pyserini's ``SpladeQueryEncoder`` (its defaults: ``max_length=256``; terms kept when in
the index with idf = log(N / df) > 0). Both encoders are subclassed only to record the float weights they quantise
(their outputs are unchanged), and run under ``torch.no_grad`` (Pyserini's CLI keeps autograd on: same values, more
memory). Hits whose docid equals the query id are dropped, as lsr-eval does for BEIR.

lsr-eval path: the benchmark's SPLADE system run in process (its cached impact index, found by
``studies.query_path.measure.impact_artefacts``; queries encoded, quantised and searched by ``ImpactSearcher``).

How they differ by design: Pyserini quantises ``round(w / 5 * 256)`` (scale 51.2) and keeps zeros, lsr-eval
``rint(w * 100)`` and drops zeros; Pyserini keeps the special tokens [CLS] / [SEP] in both vectors, lsr-eval drops
them; Pyserini's queries have max_length 256 and no term cap (lsr-eval: 64 tokens, top-256 terms; documents top-1,024
terms), and Pyserini drops query terms with idf <= 0. The ablation replaces Pyserini's parts one at a time
(:data:`STEPS`), so that a top-10 change is assigned to the first step where it appears; at the vector level,
lsr-eval's float vectors (no sparsification, specials kept, query max length 256) quantised Pyserini's way are compared
with Pyserini's integer vectors, document by document and query by query.

Caches (Pyserini's encoding, the ablation encodings and indexes) go to ``WORK/parity-pyserini/``, keyed by the model's
sha256 and every setting, so a rerun (e.g. from a clean worktree with ``--work-dir`` the shared work folder) reuses
them.
"""

from __future__ import annotations

import json
import logging
import sys
import sys as _sys
import time
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from studies.pyserini_parity.measure import STAGE, parse_args, run_parity
from studies.pyserini_parity.summary import summary_md, write_per_query


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__.split("\n\n")[0])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    t_start = time.perf_counter()
    from lsr_eval.anserini import jvm
    from lsr_eval.benchmark.config import load_config
    from lsr_eval.manifest import prepare_output, write_manifest

    run = run_parity(args, load_config(args.benchmark), started=t_start)
    result = run.result
    if args.limit_docs is not None:   # smoke test: no result files
        print(json.dumps({k: result[k] for k in ("nDCG@10", "end_to_end_top10", "ablation")}, indent=1,
                         default=str)[:6000])
        print(json.dumps(result["vectors"]["documents"], default=str)[:2000])
        print(json.dumps(result["vectors"]["queries"], default=str)[:2000])
        return 0
    out = prepare_output(args.out, run.experiment, overwrite=True)
    with open(out / "parity.json", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, default=str)
        f.write("\n")
    write_per_query(out / "per_query.csv", run.qids, run.runs, run.per_query)
    (out / "summary.md").write_text(summary_md(result), encoding="utf-8")
    write_manifest(out, STAGE, run.experiment, settings=result["settings"], inference=result["inference"],
                   artefacts=result["artefacts"],
                   outputs=["parity.json", "per_query.csv", "summary.md"], java=jvm.info(),
                   seconds=result["seconds"])
    print(summary_md(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
