"""Exact candidate filters for the SPLADE query head: how many vocabulary ids each bound leaves to score exactly.

    python studies/query_filter_bounds/run.py --out results/query-filter-bounds     # splade-tiny, SciFact test

A query's SPLADE weight of term ``v`` is ``log1p(relu(max_t h_t . W_v + c_v))``; only terms whose logit can be
positive need computing exactly. An exact filter bounds ``max_t h_t . W_v + c_v`` from above and keeps the ids whose
bound is > 0. The cheaper the bound, the looser: this script measures, on real queries, how many ids each bound keeps
(every bound is checked to keep every truly positive id):

* ``int8``: :class:`lsr_eval.models.onnx_query.OnnxQueryEncoder` itself (its ``candidates`` count per query): h
  quantised per tensor to uint8, W per row to 7 bits, the exact integer product plus Cauchy-Schwarz on both
  rounding errors. Cost: L x E x V int8 multiply-adds. It runs in ONNX Runtime's float32, so its misses are counted
  against the ids whose exact logit exceeds :data:`CLEAR` (clear of float32 rounding between the runtimes).
* ``clusters-K``: the rows of W (with the bias) in K k-means clusters (fitted on W only, not on queries), bound
  ``h_t . mu_k + ||h_t|| rho_k + max c`` per cluster, every member of a cluster whose bound is > 0 kept.
  Cost: L x E x K.
* ``box-G``: tokens in groups of G, per group and dimension the min and max of h, bound
  ``W_v+ . hi + W_v- . lo + c_v``. Cost: 2 x (L / G) x E x V.

The model runs on the CPU in fp32 (no ``--precision`` or ``--device``): the filters measured are those of the ONNX
query encoder, which computes in float32 on the CPU, and the exact logits are float64.

Outputs in ``--out``: ``bounds.json`` (mean and max kept ids per bound, positive ids, cost in multiply-adds) and
``summary.md``, with ``manifest.json``.
"""

from __future__ import annotations

import json
import sys
import sys as _sys
import time
from pathlib import Path as _Path
from typing import Any

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from studies.query_filter_bounds.measure import parse_args
from studies.query_filter_bounds.summary import summary_md

STAGE = "bench-query-filter-bounds"
#: an id counts as missed by the ONNX filter only when its exact (float64) logit exceeds this
CLEAR = 1e-4


def head_inputs(enc, texts: list[str]) -> list:
    """``h`` (L x E, float64) of each text: the model up to the decoder's input."""
    import torch

    from lsr_eval.models.encoder import head_features

    out = []
    with torch.inference_mode():
        for text in texts:
            b = enc.tokenize([text])
            out.append(head_features(enc.mlm, b["input_ids"], b["attention_mask"])[0].double().numpy())
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__.split("\n\n")[0])
    import numpy as np
    from sklearn.cluster import KMeans

    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.manifest import prepare_output, write_manifest
    from lsr_eval.models.encoder import SpladeEncoder
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.onnx_query import OnnxQueryEncoder, decoder_of

    dataset = load_dataset(args.dataset, args.split)
    queries = dataset.queries()
    experiment = {"benchmark": STAGE, "dataset": dataset.describe(), "model": args.model,
                  "max_length_q": args.max_length_q, "clusters": args.clusters, "groups": args.groups,
                  "seed": args.seed, "queries": len(queries)}
    out = prepare_output(args.out, experiment, overwrite=args.overwrite)
    enc = SpladeEncoder.from_pretrained(resolve_model(args.model), args.max_length_q)
    enc.eval()
    dec = decoder_of(enc)
    W, c = dec.W.astype(np.float64), dec.c.astype(np.float64)
    V, E = W.shape
    hs = head_inputs(enc, [q.text for q in queries])
    exact = [(h @ W.T).max(0) + c for h in hs]
    positive = [int((z > 0).sum()) for z in exact]
    lengths = [len(h) for h in hs]
    onnx = OnnxQueryEncoder(enc, args.work_dir)
    kept: dict[str, list[int]] = {"int8": []}
    violations = {"int8": 0}
    for q, z in zip(queries, exact):
        stats: dict[str, float] = {}
        idx, _ = onnx.pooled(onnx.tokenize(q.text).ids, stats)
        kept["int8"].append(int(stats["candidates"]))
        violations["int8"] += int(np.setdiff1d(np.flatnonzero(z > CLEAR), idx).size)
    cost = {"int8": float(np.mean(lengths)) * E * V}
    for k in args.clusters:
        t0 = time.perf_counter()
        km = KMeans(k, n_init=1, max_iter=30, random_state=args.seed).fit(np.hstack([W, c[:, None]]))
        lab = km.labels_
        size = np.bincount(lab, minlength=k)
        mu = np.zeros((k, E))
        rho = np.zeros(k)
        cmax = np.full(k, -np.inf)
        for j in range(k):
            m = lab == j
            mu[j] = W[m].mean(0)
            rho[j] = np.linalg.norm(W[m] - mu[j], axis=1).max()
            cmax[j] = c[m].max()
        name = f"clusters-{k}"
        kept[name], violations[name] = [], 0
        for h, z in zip(hs, exact):
            bound = (h @ mu.T + np.linalg.norm(h, axis=1)[:, None] * rho[None, :]).max(0) + cmax
            kept[name].append(int(size[bound > 0].sum()))
            violations[name] += int(((z > 0) & ~(bound > 0)[lab]).sum())
        cost[name] = float(np.mean(lengths)) * E * k
        print(f"{name}: fitted in {time.perf_counter() - t0:.1f} s", flush=True)
    Wp, Wn = np.maximum(W, 0), np.minimum(W, 0)
    for g in args.groups:
        name = f"box-{g}"
        kept[name], violations[name] = [], 0
        for h, z in zip(hs, exact):
            best = np.full(V, -np.inf)
            for s0 in range(0, len(h), g):
                part = h[s0:s0 + g]
                best = np.maximum(best, Wp @ part.max(0) + Wn @ part.min(0))
            bound = best + c
            kept[name].append(int((bound > 0).sum()))
            violations[name] += int(((z > 0) & ~(bound > 0)).sum())
        cost[name] = 2 * float(np.mean([np.ceil(n / g) for n in lengths])) * E * V
    result: dict[str, Any] = {
        "model": args.model, "split": args.split, "inference": {"device": str(enc.device),
                                                                "precision": onnx.precision.to_dict()},
        "queries": len(queries), "vocab": V, "hidden": E, "mean_tokens": float(np.mean(lengths)),
        "positive_mean": float(np.mean(positive)),
        "bounds": {name: {"kept_mean": float(np.mean(v)), "kept_max": int(np.max(v)),
                          "first_pass_multiply_adds": cost[name], "missed_positive_ids": violations[name]}
                   for name, v in kept.items()},
    }
    text = summary_md(result, args.model, args.split)
    (out / "bounds.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(text, encoding="utf-8")
    write_manifest(out, STAGE, experiment, outputs=["bounds.json", "summary.md"], inference=result["inference"])
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
