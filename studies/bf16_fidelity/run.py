"""bf16 against fp32 for one SPLADE model on one dataset: what the cheaper precision changes in the results.

    python studies/bf16_fidelity/run.py --out results/bf16-fidelity        # splade-tiny, SciFact test

The same chain (:func:`lsr_eval.pipeline.splade.run_splade`: encode the corpus, export, index with Anserini,
encode and search the queries) runs twice with the same settings but ``precision`` (``fp32``, then ``bf16``, forced:
``auto`` would pick fp32 on a CPU without avx512_bf16/AMX). Compared, in memory:

* every measure of the dataset (nDCG@10 first) and its difference bf16 - fp32;
* the share of queries whose top 10 is identical: the same documents in the same order (``ordered``) and the same
  set of documents (``as_set``); ranks are by score, then docid ascending (the engines' order; run files list ties
  by docid descending, as trec_eval sorts them); the differing queries are listed with their overlap;
* the share of queries whose integer query vectors (``rint(weight * scale)``, as searched) are identical, with the
  differing terms of the first few.

On a CPU without native bf16 (AVX2, or AVX-512 without avx512_bf16) PyTorch's oneDNN kernels convert bf16 operands
to float32 and accumulate in float32, as the native instructions do, so the numbers (not the speed) are those of a
bf16 machine up to summation order. The encoding time of each precision is recorded, with the machine
(:func:`lsr_eval.hardware.describe`: CPU flags, GPUs) and the device (``--device``, default auto: CUDA when present).

Outputs in ``--out``: ``fidelity.json``, ``summary.md`` and ``manifest.json``; the two runs' folders (runs, metrics,
manifests) in ``WORK/bench-bf16-fidelity/``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import sys as _sys
import time
from pathlib import Path
from pathlib import Path as _Path
from typing import Any

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from studies.bf16_fidelity.measure import PRECISIONS, STAGE, TOP, parse_args
from studies.bf16_fidelity.summary import summary_text
from studies.harness.agreement import top_agreement, weight_map_agreement

log = logging.getLogger("bench_bf16_fidelity")


def _label(name: str) -> str:
    """A folder name for a dataset name (which may be a path)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in Path(name).name or name)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__.split("\n\n")[0])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from lsr_eval import hardware
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.encode.queries import encode_queries
    from lsr_eval.encode.splade import SpladeTextEncoder
    from lsr_eval.export.queries import query_weight_maps
    from lsr_eval.manifest import machine, prepare_output, write_manifest
    from lsr_eval.models.device import resolve_device
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.precision import resolve_precision
    from lsr_eval.pipeline.splade import SpladeSettings, run_splade
    from lsr_eval.workdir import work_dir

    dataset = load_dataset(args.dataset, args.split)
    base = dict(model=resolve_model(args.model), doc_top_k=args.doc_top_k, query_top_k=args.query_top_k,
                scale=args.scale,
                batch_size=args.batch_size, max_length_d=args.max_length_d, max_length_q=args.max_length_q)
    device = resolve_device(args.device)
    # the device is not the experiment's identity (as in run_splade): it is recorded in fidelity.json
    experiment = {"benchmark": STAGE, "dataset": dataset.describe(), "settings": base, "precisions": PRECISIONS,
                  "top": TOP, "threads": args.threads}
    out = prepare_output(args.out, experiment, overwrite=args.overwrite)
    work = work_dir(args.work_dir)
    systems: dict[str, dict[str, Any]] = {}
    for precision in PRECISIONS:
        settings = SpladeSettings.from_flat(**base, precision=precision, device=args.device)
        t0 = time.perf_counter()
        result = run_splade(dataset, work / STAGE / _label(dataset.describe()["name"]) / precision, work,
                            settings, threads=args.threads, overwrite=args.overwrite)
        seconds = time.perf_counter() - t0
        model = result.model
        if model is None:    # a finished run was reused: load the model for the query vectors
            from lsr_eval.pipeline.splade import load_model

            model = load_model(settings)
        encoded = encode_queries(dataset.queries(), SpladeTextEncoder(model.query), batch_size=args.batch_size)
        systems[precision] = {"result": result, "seconds": seconds,
                              "maps": query_weight_maps(encoded.vectors, args.scale),
                              "resolved": model.document.resolved_precision().to_dict()}
        log.info("%s: %s in %.0f s (%s)", precision, result.metrics, seconds,
                 "reused" if result.reused else "computed")
    ref, low = systems["fp32"], systems["bf16"]
    metrics = {m: {"fp32": ref["result"].metrics[m], "bf16": low["result"].metrics.get(m),
                   "difference": (low["result"].metrics[m] - ref["result"].metrics[m])
                   if m in low["result"].metrics else None} for m in ref["result"].metrics}
    fidelity = {
        "metrics": metrics,
        "top10": top_agreement(ref["result"].run, low["result"].run, TOP),
        "query_vectors": weight_map_agreement(ref["maps"], low["maps"]),
        "precision": {p: s["resolved"] for p, s in systems.items()},
        "seconds": {p: round(s["seconds"], 1) for p, s in systems.items()},
        "reused": {p: s["result"].reused for p, s in systems.items()},
        "model": args.model, "device": str(device), "machine": machine(),
        "cpu": {"flags": sorted(hardware.cpu_flags()), "auto_resolves_to": resolve_precision("auto", device).to_dict()},
        "folders": {p: str(s["result"].folder) for p, s in systems.items()},
    }
    with open(out / "fidelity.json", "w", encoding="utf-8") as f:
        json.dump(fidelity, f, indent=2, default=str)
        f.write("\n")
    (out / "summary.md").write_text(summary_text(fidelity, dataset.describe()["name"], args.model), encoding="utf-8")
    write_manifest(out, STAGE, experiment, outputs=["fidelity.json", "summary.md"],
                   counts={"queries": fidelity["top10"]["queries"]}, timings=fidelity["seconds"],
                   load_average_end=list(os.getloadavg()))
    print((out / "summary.md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
