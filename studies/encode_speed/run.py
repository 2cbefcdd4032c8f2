"""Side-by-side SPLADE encoding benchmark, in one run: lsr-eval's document encoder against Pyserini's
``SpladeDocumentEncoder`` on the same model and the same SciFact documents, the head-matmul roofline measured in the
same run, and the single-query encoding latency (one thread) of lsr-eval's lean path, its batched reference path and
Pyserini's ``SpladeQueryEncoder``, with the integer-vector fidelity of the lean path.

    python studies/encode_speed/run.py --out results/encode [--models splade-tiny minilm --docs 1000]
    python studies/encode_speed/run.py --precisions fp32 bf16 --out DIR     # what fp32 costs against bf16, one run

Documents: the first ``--docs`` of SciFact's corpus (``title + " " + text``, 256 tokens max), batches of 32.

* lsr-eval: :func:`lsr_eval.encode.batching.encode_window` over :class:`SpladeTextEncoder` (what ``lsr-eval encode``
  runs per window: length-sorted batches, chunked head, CSR output) in each precision of ``--precisions`` (default
  fp32, :data:`lsr_eval.models.options.DEFAULT_PRECISION`), the same weights, one after the other in every part. The
  first precision listed is the one compared with Pyserini and the roofline; each other one is compared with it:
  docs/s side by side and the agreement of the vectors (:func:`studies.harness.agreement.vector_agreement`).
  Whether bf16 is native here is read from the recorded machine (:func:`lsr_eval.hardware.describe`: CPU flags, GPUs),
  not assumed.
* Device (``--device``, default cpu): documents, Pyserini and the roofline run on it; the default is the CPU because
  that is where Pyserini's encoder and the roofline are compared (GPU encoding: ``pipelines/gpu_check.sh``). Query
  latency is a one-thread CPU figure whatever the device.
* Pyserini: ``SpladeDocumentEncoder.encode(batch, max_length=256)`` in corpus order (as its encode CLI feeds it),
  under ``torch.inference_mode`` (favourable to it), its ``model`` replaced by lsr-eval's loaded one so both compute
  the same function (MiniLM has no MLM head: Pyserini would load a random one; lsr-eval's identity head is kept).
  Its output (``round(w / 5 * 256)`` per term) is compared with lsr-eval's weights quantised the same way.
* Roofline: ``torch.mm`` of (T x E) hidden states by the (E x V) decoder in blocks of T = 8,192 tokens (one batch of
  32 x 256), output preallocated, as many tokens as the documents have real tokens; its GFLOP/s gives the head-bound
  limit ``GFLOP/s / (2 E V x real tokens per document)``. The three (lsr-eval, Pyserini, roofline) alternate part by
  part (``--part-batches`` batches), so load on a shared machine drifts evenly over them.
  The backbone's own work is not in that limit, so 100% is out of reach (MiniLM's backbone costs about as much as
  its head).
* Queries (``--query-models``): SciFact test + train queries, one at a time, one thread, interleaved query by query.
  ``lean``: ``SpladeEncoder.encode([q])`` (fast tokenizer backend, chunked head, sparsify on the pooled vector);
  ``reference``: the batched path of a batch of one with the full B x L x V logits (lsr-eval before the chunked
  head); ``pyserini``: ``SpladeQueryEncoder.encode(q)`` with lsr-eval's model. Fidelity: integer query vectors
  (``rint(100 w)``, top-k/threshold as configured) of ``lean`` against the batched reference path over all queries.

Pyserini's classes come from :mod:`lsr_eval.anserini.pyserini_modules` (the JVM started first, a dummy
``OPENAI_API_KEY``: ``pyserini.encode`` builds an OpenAI client at import). The machine may be shared: compare the
ratios measured in the same run.
"""

from __future__ import annotations

import json
import os
import sys as _sys
from pathlib import Path
from pathlib import Path as _Path
from typing import Any

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from studies.encode_speed.measure import (
    STAGE,
    bench_documents,
    bench_queries,
    parse_args,
    pyserini_classes,
    read_docs,
    read_queries,
)
from studies.encode_speed.summary import summary_md


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__.split("\n\n")[0])
    import torch

    from lsr_eval.manifest import machine, write_manifest

    if args.threads:
        torch.set_num_threads(args.threads)
    PyDoc, PyQuery = pyserini_classes()
    data = Path(args.data)
    docs = read_docs(data, args.docs)
    queries = read_queries(data, args.queries)
    result: dict[str, Any] = {
        "parameters": {"docs": len(docs), "batch_size": args.batch_size, "max_length": args.max_length,
                       "max_length_q": args.max_length_q, "models": args.models, "query_models": args.query_models,
                       "precisions": args.precisions, "device": args.device},
        "torch_threads": torch.get_num_threads(),
        "load_average": {"start": list(os.getloadavg())}, "documents": [], "queries": []}
    for name in args.models:
        print(f"documents: {name}", flush=True)
        result["documents"].append(bench_documents(name, docs, args, PyDoc))
        print(json.dumps({k: result["documents"][-1][k] for k in ("lsr_eval", "pyserini", "ratio_vs_pyserini",
                                                                  "fraction_of_roofline")}), flush=True)
    for name in args.query_models:
        print(f"queries: {name}", flush=True)
        result["queries"].append(bench_queries(name, queries, args, PyQuery))
        print(json.dumps(result["queries"][-1]["latency"]), flush=True)
    result["load_average"]["end"] = list(os.getloadavg())
    result["machine"] = machine()   # after the models ran: the GPUs are described when CUDA was used
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = summary_md(result)
    (out / "bench_encode.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(text, encoding="utf-8")
    write_manifest(out, STAGE, {"bench": "encode", **result["parameters"]},
                   outputs=["bench_encode.json", "summary.md"],
                   figures={d["model"]: {"lsr_eval_docs_per_s": d["lsr_eval"]["docs_per_s"],
                                         "pyserini_docs_per_s": d["pyserini"]["docs_per_s"],
                                         "ratio": d["ratio_vs_pyserini"],
                                         "fraction_of_roofline": d["fraction_of_roofline"],
                                         "docs_per_s_by_precision": {p: x["docs_per_s"]
                                                                     for p, x in d["precisions"].items()}}
                            for d in result["documents"]})
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
