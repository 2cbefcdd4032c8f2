"""Training-step time of SPLADE with the vocabulary-chunked head (sparse arg-max backward) against the full B x L x V
logits, side by side in one run on the same fixed batch; loss and gradients compared on the first step.

    python pipelines/bench_train_step.py --out results/train_step [--model splade-tiny --steps 5]

Each step: 16 SciFact train queries (64 tokens max), their first judged document and ``--negatives`` other SciFact
documents each (256 tokens max), in-batch InfoNCE + FLOPS, backward, AdamW (fp32). The two paths alternate step by
step from the same initial weights (each path has its own copy), so load on a shared machine hits both alike.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def fixed_batch(data: Path, n_queries: int, negatives: int) -> tuple[list[str], list[str]]:
    """Queries and slot-major documents (positives, then each round of negatives) from SciFact train."""
    corpus = {}
    with open(data / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            corpus[d["_id"]] = f"{d['title']} {d['text']}".strip()
    queries = {}
    with open(data / "queries.jsonl", encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            queries[q["_id"]] = q["text"]
    pos = {}
    with open(data / "qrels" / "train.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, did, _ = line.rstrip("\n").split("\t")
            pos.setdefault(qid, did)
    qids = sorted(pos)[:n_queries]
    ids = sorted(corpus)
    docs = [corpus[pos[q]] for q in qids]
    for k in range(negatives):
        docs += [corpus[ids[(7919 * (i + 1) + 104729 * k) % len(ids)]] for i in range(len(qids))]
    return [queries[q] for q in qids], docs


def loss_of(model, q, d, lam: float = 3e-4):
    import torch
    import torch.nn.functional as F

    wq = model.query(q["input_ids"], q["attention_mask"])
    wd = model.document(d["input_ids"], d["attention_mask"])
    scores = wq @ wd.T
    rank = F.cross_entropy(scores, torch.arange(len(wq)))
    flops = (wd.abs().mean(0) ** 2).sum() + (wq.abs().mean(0) ** 2).sum()
    return rank + lam * flops


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="splade-tiny")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "beir" / "scifact"))
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--queries", type=int, default=16)
    p.add_argument("--negatives", type=int, default=2)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = p.parse_args()

    import torch

    from lsr_eval.manifest import write_manifest
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.splade import SpladeModel

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    base = SpladeModel.from_pretrained(resolve_model(args.model), max_length_q=64, max_length_d=256)
    queries, docs = fixed_batch(Path(args.data), args.queries, args.negatives)
    q = base.query.tokenize(queries)
    d = base.document.tokenize(docs)
    paths = {}
    for name, chunked in (("chunked", True), ("full_logits", False)):
        model = copy.deepcopy(base)
        model.query.chunked = model.document.chunked = chunked
        model.train()
        for m in model.modules():       # dropout off: the two paths must see the same function
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
        paths[name] = {"model": model, "opt": opt, "times": [], "losses": []}

    first = {}
    for step in range(args.steps):
        for name, st in paths.items():
            t0 = time.perf_counter()
            st["opt"].zero_grad(set_to_none=True)
            loss = loss_of(st["model"], q, d)
            loss.backward()
            if step == 0:
                first[name] = (loss.item(), {n: p.grad.detach().clone() for n, p in st["model"].named_parameters()
                                             if p.grad is not None})
            st["opt"].step()
            st["times"].append(time.perf_counter() - t0)
            st["losses"].append(loss.item())
            print(f"step {step + 1} {name}: {st['times'][-1]:.2f} s, loss {st['losses'][-1]:.6f}", flush=True)

    (la, ga), (lb, gb) = first["chunked"], first["full_logits"]
    diffs = {n: float((ga[n] - gb[n]).abs().max()) for n in gb}
    scales = {n: float(gb[n].abs().max()) for n in gb}
    # relative to the gradient's scale, over gradients that are not zero in theory (attention key biases are:
    # softmax ignores a constant shift, so their float noise ~1e-10 would dominate a ratio)
    worst = max(diffs, key=lambda n: diffs[n] / max(scales[n], 1e-3))
    result = {
        "model": args.model, "steps": args.steps, "queries": args.queries, "documents": len(docs),
        "max_length_q": 64, "max_length_d": 256, "doc_tokens": int(d["attention_mask"].sum()),
        "doc_shape": list(d["input_ids"].shape), "threads": torch.get_num_threads(),
        "step_seconds": {n: st["times"] for n, st in paths.items()},
        "median_step_s": {n: statistics.median(st["times"]) for n, st in paths.items()},
        "losses": {n: st["losses"] for n, st in paths.items()},
        "first_step": {"loss_chunked": la, "loss_full": lb, "loss_abs_diff": abs(la - lb),
                       "grad_max_abs_diff": max(diffs.values()),
                       "grad_max_abs_diff_param": max(diffs, key=diffs.get),
                       "worst_relative_param": worst, "worst_relative_diff": diffs[worst] / max(scales[worst], 1e-3),
                       "params_compared": len(diffs), "same_params_with_grad": ga.keys() == gb.keys()},
    }
    result["speedup"] = result["median_step_s"]["full_logits"] / result["median_step_s"]["chunked"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_train_step.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    fs = result["first_step"]
    md = [f"# SPLADE training step: chunked head vs full logits ({args.model})", "",
          f"{args.steps} AdamW steps (fp32) on one fixed batch: {args.queries} queries, {len(docs)} documents "
          f"(padded shape {result['doc_shape']}, {result['doc_tokens']} real tokens), {result['threads']} threads; "
          "the two paths alternate step by step (shared machine: compare the ratio).", "",
          "| path | median step (s) | steps (s) |", "|---|---|---|"]
    for n, st in paths.items():
        md.append(f"| {n} | {result['median_step_s'][n]:.3f} | {', '.join(f'{t:.2f}' for t in st['times'])} |")
    md += ["", f"Speed-up: **{result['speedup']:.2f}x**. First step: loss {la:.6f} vs {lb:.6f} "
           f"(|diff| {fs['loss_abs_diff']:.2e}); gradients of {fs['params_compared']} parameters, max |diff| "
           f"{fs['grad_max_abs_diff']:.2e} ({fs['grad_max_abs_diff_param']}), largest relative to the gradient's "
           f"scale {fs['worst_relative_diff']:.2e} ({worst})."]
    (out / "summary.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    write_manifest(out, "bench-train-step", {"bench": "train-step", "model": args.model, "steps": args.steps,
                                             "queries": args.queries, "negatives": args.negatives},
                   outputs=["bench_train_step.json", "summary.md"], speedup=result["speedup"],
                   median_step_s=result["median_step_s"])
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
