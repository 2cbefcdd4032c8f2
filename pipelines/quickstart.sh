#!/usr/bin/env bash
# The main job on SciFact: BM25, a SPLADE model, their RRF fusion, and the report with its plots.
# SPLADE model: the checkpoint trained by pipelines/train_scifact.sh when it is present in the work folder, else the
# offline MiniLM with its identity-initialised head (no training). Everything is cached in $WORK: a rerun is fast.
set -euo pipefail
SHARED=${SHARED:-../shared/data}
WORK=${WORK:-work}
OUT=${OUT:-$WORK/quickstart}
MODEL=${MODEL:-$WORK/train/scifact-minilm/model}
if [ ! -f "$MODEL/splade_config.json" ]; then
  echo "quickstart: no trained checkpoint at $MODEL; using the offline MiniLM (identity head, no training)"
  MODEL=minilm
fi
mkdir -p "$OUT"
cat > "$OUT/benchmark.yaml" <<YAML
name: quickstart-scifact
out: $OUT/results/scifact
datasets:
  - {spec: $SHARED/beir/scifact, split: test, label: scifact, measures: [nDCG@10, RR@10, R@100, R@1000]}
systems:
  - {name: bm25, kind: bm25}
  - {name: splade, kind: splade, model: $MODEL, max_length_d: 128, doc_top_k: 128, query_top_k: 32, batch_size: 32}
fusion:
  - {name: rrf, method: rrf, runs: [bm25, splade]}
significance: {baseline: bm25, test: t-test}
efficiency: {latency_queries: 50, warmup: 5}
YAML
python -m lsr_eval.cli benchmark "$OUT/benchmark.yaml" --work-dir "$WORK"
python -m lsr_eval.cli report "$OUT/results" --out "$OUT/report" --overwrite
echo "quickstart: report at $OUT/report/index.html"
