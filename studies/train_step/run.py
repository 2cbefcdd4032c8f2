"""Training-step time of SPLADE with the vocabulary-chunked head (sparse arg-max backward) against the full B x L x V
logits, side by side in one run on the same fixed batch; loss and gradients compared on the first step.

    python studies/train_step/run.py --out results/train_step [--model splade-tiny --steps 5]

Each step: 16 SciFact train queries (``--max-length-q``, 64 tokens), their first judged document and
``--negatives`` other SciFact documents each (``--max-length-d``, 256 tokens), in-batch InfoNCE + FLOPS, backward,
AdamW (fp32 weights). The forward pass runs in ``--precision`` (default fp32; bf16, or auto = bf16 autocast where
the hardware has it, opt in) on ``--device`` (default auto: CUDA when present); both resolved are recorded. The two
paths alternate step by step from the same initial weights (each path has its own copy), so load on a shared
machine hits both alike.
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import sys as _sys
import time
from pathlib import Path
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from studies.train_step.measure import parse_args
from studies.train_step.summary import summary_md


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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__)

    from contextlib import nullcontext

    import torch

    from lsr_eval.manifest import write_manifest
    from lsr_eval.models.device import resolve_device
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.precision import resolve_precision
    from lsr_eval.models.splade import SpladeModel

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = resolve_device(args.device)
    precision = resolve_precision(args.precision, device)
    base = SpladeModel.from_pretrained(resolve_model(args.model), max_length_q=args.max_length_q,
                                       max_length_d=args.max_length_d).to(device)
    queries, docs = fixed_batch(Path(args.data), args.queries, args.negatives)
    q = {k: v.to(device) for k, v in base.query.tokenize(queries).items()}
    d = {k: v.to(device) for k, v in base.document.tokenize(docs).items()}
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if precision.bf16 else nullcontext
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
            with autocast():
                loss = loss_of(st["model"], q, d)
            loss.backward()
            if step == 0:
                first[name] = (loss.item(), {n: p.grad.detach().clone() for n, p in st["model"].named_parameters()
                                             if p.grad is not None})
            st["opt"].step()
            st["losses"].append(loss.item())    # .item() waits for the device: the step's time is complete
            st["times"].append(time.perf_counter() - t0)
            print(f"step {step + 1} {name}: {st['times'][-1]:.2f} s, loss {st['losses'][-1]:.6f}", flush=True)

    (la, ga), (lb, gb) = first["chunked"], first["full_logits"]
    diffs = {n: float((ga[n] - gb[n]).abs().max()) for n in gb}
    scales = {n: float(gb[n].abs().max()) for n in gb}
    # relative to the gradient's scale, over gradients that are not zero in theory (attention key biases are:
    # softmax ignores a constant shift, so their float noise ~1e-10 would dominate a ratio)
    worst = max(diffs, key=lambda n: diffs[n] / max(scales[n], 1e-3))
    result = {
        "model": args.model, "steps": args.steps, "queries": args.queries, "documents": len(docs),
        "max_length_q": args.max_length_q, "max_length_d": args.max_length_d,
        "doc_tokens": int(d["attention_mask"].sum()),
        "doc_shape": list(d["input_ids"].shape), "threads": torch.get_num_threads(),
        "device": str(device), "precision": precision.to_dict(),
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
    result["load_average"] = list(os.getloadavg())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = summary_md(result)
    (out / "bench_train_step.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(text, encoding="utf-8")
    experiment = {"bench": "train-step", "model": args.model, "steps": args.steps, "queries": args.queries,
                  "negatives": args.negatives}
    if precision.name != "fp32":   # earlier results (fp32, before the option) keep their identity
        experiment["precision"] = precision.name
    write_manifest(out, "bench-train-step", experiment, outputs=["bench_train_step.json", "summary.md"],
                   speedup=result["speedup"], median_step_s=result["median_step_s"],
                   inference={"device": str(device), "precision": precision.to_dict()})
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
