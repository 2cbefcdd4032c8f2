"""Writes the small synthetic results folder used by tests/test_report*.py and the notebooks.

Run from the repository root: ``python tests/data/report/make_data.py``. The numbers are made up but chosen so that
tests can check them by hand: BEIR-13 nDCG@10 of splade-minilm-k4 is 0.30, 0.31, ..., 0.42 (mean 0.36).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
BEIR = ("trec-covid", "nfcorpus", "nq", "hotpotqa", "fiqa", "arguana", "webis-touche2020", "quora", "dbpedia-entity",
        "scidocs", "fever", "climate-fever", "scifact")
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
ETTIN = "jhu-clsp/ettin-encoder-17m"
HEAD_NORM = {MINILM: 190.32, ETTIN: 1530.7}

# system -> (model, k written in the table, BEIR nDCG@10 start, RR@10, DL19 nDCG@10)
SYSTEMS = {
    "bm25": ("", None, 0.25, 0.1840, 0.5058),
    "splade-minilm-k1": ("results/train/minilm-k1/model", 1.0, 0.28, 0.3012, 0.6512),
    "splade-minilm-k4": ("results/train/minilm-k4/model", 4.0, 0.30, 0.3456, 0.6890),
    "splade-minilm-k16": ("results/train/minilm-k16/model", 16.0, 0.29, 0.3321, 0.6700),
    "splade-ettin-k1": ("results/train/ettin-k1/model", 1.0, 0.27, 0.3102, 0.6600),
    "splade-ettin-k16": ("results/train/ettin-k16/model", None, 0.32, 0.3587, None),  # k comes from the run
}
# system -> (flops, avg_q_dims, avg_d_dims, latency mean, p50, p99, index bytes) on msmarco-dev
EFFICIENCY = {
    "bm25": (None, None, None, 12.3, 10.1, 45.6, 2_254_857_830),
    "splade-minilm-k1": (4.12, 42.1, 210.5, 48.2, 40.3, 160.4, 4_912_000_000),
    "splade-minilm-k4": (1.83, 24.7, 132.8, 25.4, 21.0, 95.2, 3_600_000_000),
    "splade-minilm-k16": (0.92, 15.2, 88.1, 15.8, 13.2, 60.9, 2_900_000_000),
    "splade-ettin-k1": (6.51, 55.0, 260.3, None, None, None, 5_800_000_000),  # latency missing (status ok)
    "splade-ettin-k16": (1.21, 20.3, 110.7, 19.9, 16.5, 70.2, 3_300_000_000),
}
EFF_COLUMNS = ("flops", "avg_q_dims", "avg_d_dims", "latency_mean_ms", "latency_p50_ms", "latency_p99_ms",
               "index_bytes")


def _manifest(experiment: dict, command: list[str], created: str) -> dict:
    return {"stage": "benchmark", "experiment": experiment,
            "versions": {"python": "3.11.9", "lsr-eval": "0.1.0", "pyserini": "1.6.0", "torch": "2.13.0"},
            "commit": "0123abc", "machine": {"cpu": "AMD EPYC (synthetic)", "cores": 2, "platform": "Linux"},
            "command": command, "created": created}


def rescaling_rows() -> list[dict]:
    rows = []
    for system, (model, k, beir0, rr, dl) in SYSTEMS.items():
        base = {"system": system, "model": model, "k": k, "baseline": "bm25"}
        better = system != "bm25"
        eff = dict(zip(EFF_COLUMNS, EFFICIENCY[system]))
        rows.append({**base, "dataset": "msmarco-dev", "status": "ok", "RR@10": rr, "RR@10_sig": "†" * better,
                     "R@1000": 0.8526 if system == "bm25" else 0.9612, "R@1000_sig": "", **eff})
        if dl is None:
            rows.append({**base, "dataset": "dl19", "status": "not run"})
        else:
            rows.append({**base, "dataset": "dl19", "status": "ok", "nDCG@10": dl, "nDCG@10_sig": "†" * better,
                         "R@1000(rel=2)": round(dl + 0.1, 4), "R@1000(rel=2)_sig": ""})
        for i, d in enumerate(BEIR):
            ndcg = round(beir0 + 0.01 * i, 4)
            row = {**base, "dataset": d, "status": "ok", "nDCG@10": ndcg, "nDCG@10_sig": "",
                   "R@100": round(ndcg + 0.2, 4), "R@1000": round(ndcg + 0.3, 4)}
            if system == "splade-minilm-k1" and d == "climate-fever":
                row = {**base, "dataset": d, "status": "failed: out of memory"}
            if system == "splade-minilm-k16" and d == "fever":
                row = {**base, "dataset": d, "status": "not run"}
            if system == "splade-minilm-k16" and d == "nq":
                continue  # no row at all: "absent"
            if d == "scifact":
                scale = 0.05  # scifact is small: FLOPs and latency ~20x below msmarco-dev
                row.update({c: (v * scale if v is not None and c != "avg_q_dims" else v)
                            for c, v in eff.items() if c != "index_bytes"})
                row["nDCG@10_sig"] = "†" * (better and ndcg > 0.6)
            rows.append(row)
    return rows


def fusion_rows(rescaling: list[dict]) -> list[dict]:
    same = {(r["dataset"], r["system"]): r for r in rescaling}
    rows = []
    for d in ("scifact", "nfcorpus"):
        for s in ("bm25", "splade-minilm-k4"):
            r = same[(d, s)]
            rows.append({k: r.get(k) for k in ("dataset", "system", "model", "k", "status", "nDCG@10",
                                               "nDCG@10_sig", "R@100", "R@1000", "baseline")})
        rows.append({"dataset": d, "system": "rrf(bm25,splade-minilm-k4)", "model": "", "k": None, "status": "ok",
                     "nDCG@10": 0.7012 if d == "scifact" else 0.3567, "nDCG@10_sig": "†", "R@100": 0.95,
                     "R@1000": 0.99, "baseline": "bm25"})
        if d == "nfcorpus":
            rows.append({"dataset": d, "system": "wsum(bm25,splade-minilm-k4)", "model": "", "k": None,
                         "status": "failed: run file missing", "baseline": "bm25"})
        else:
            rows.append({"dataset": d, "system": "wsum(bm25,splade-minilm-k4)", "model": "", "k": None,
                         "status": "ok", "nDCG@10": 0.7100, "nDCG@10_sig": "†", "R@100": 0.96, "R@1000": 0.99,
                         "baseline": "bm25"})
    return rows


def training_log(backbone: str, k: float, seed: int, resumed: bool) -> list[dict]:
    rng = random.Random(seed)
    start = 1.2 + 0.4 * math.log2(k) if backbone == MINILM else 2.5 - 0.1 * math.log2(k)
    records = []
    for step in range(0, 1001, 25):
        rank = 0.25 + start * math.exp(-step / 200) + rng.uniform(-0.03, 0.03)
        lam = 1e-3 * min(1.0, step / 500)
        flops_d = 40.0 * math.exp(-step / 400) / k ** 0.5 + 1.0
        records.append({
            "step": step, "loss": round(rank + lam * flops_d, 5), "rank": round(rank, 5),
            "flops_d": round(flops_d, 4), "l1_q": round(0.8 * flops_d, 4), "lambda_q": lam * 3, "lambda_d": lam,
            "active_dims_q": round(60 * math.exp(-step / 500) / k ** 0.25 + 12, 2),
            "active_dims_d": round(300 * math.exp(-step / 500) / k ** 0.25 + 80, 2),
            "batch_flops": round(flops_d * 0.9, 4), "head_norm": round(HEAD_NORM[backbone] / k + 0.001 * step, 4),
            "lr": 2e-5 * min(1.0, step / 100), "step_time": round(0.41 + rng.uniform(0, 0.05), 4)})
    if resumed:  # crashed after step 550, resumed from step 475: steps 500-550 logged twice, the later lines count
        stale = [{**r, "loss": round(r["loss"] + 1.0, 5)} for r in records if 500 <= r["step"] <= 550]
        records = [r for r in records if r["step"] < 500] + stale + [r for r in records if r["step"] >= 500]
    return records


def write_training(root: Path) -> None:
    runs = {"minilm-k1": (MINILM, 1.0), "minilm-k4": (MINILM, 4.0), "minilm-k16": (MINILM, 16.0),
            "ettin-k1": (ETTIN, 1.0), "ettin-k16": (ETTIN, 16.0)}
    for seed, (name, (backbone, k)) in enumerate(runs.items()):
        folder = root / "train" / name
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "log.jsonl", "w", encoding="utf-8") as f:
            for rec in training_log(backbone, k, seed, resumed=name == "minilm-k4"):
                f.write(json.dumps(rec) + "\n")
            if name == "minilm-k4":
                f.write("\n")
        if backbone == MINILM:  # two manifest shapes: the loader must find both
            experiment = {"backbone": backbone, "rescale_k": k, "steps": 1000, "batch_size": 32}
        else:
            experiment = {"name": name, "config": {"model": backbone, "k": int(k), "steps": 1000}}
        manifest = _manifest(experiment, ["lsr-eval", "train", "--k", f"{k:g}"], f"2026-03-0{seed + 1}T10:00:00+00:00")
        manifest["stage"] = "train"
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    rescaling = rescaling_rows()
    folder = HERE / "rescaling"
    folder.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rescaling)
    frame.to_csv(folder / "table.csv", index=False)
    (folder / "table.json").write_text(frame.to_json(orient="records", force_ascii=False), encoding="utf-8")
    manifest = _manifest({"name": "rescaling", "datasets": ["msmarco-dev", "dl19", "beir-13"],
                          "systems": list(SYSTEMS)}, ["lsr-eval", "benchmark", "rescaling"],
                         "2026-03-10T12:00:00+00:00")
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", "utf-8")

    fusion = HERE / "fusion"
    fusion.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(fusion_rows(rescaling)).to_csv(fusion / "table.csv", index=False)  # CSV only
    manifest = _manifest({"name": "fusion", "datasets": ["scifact", "nfcorpus"], "methods": ["rrf", "wsum"]},
                         ["lsr-eval", "benchmark", "fusion"], "2026-03-11T09:30:00+00:00")
    (fusion / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", "utf-8")
    write_training(HERE)


if __name__ == "__main__":
    main()
