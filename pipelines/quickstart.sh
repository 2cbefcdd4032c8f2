#!/usr/bin/env bash
# The main job on SciFact test with the offline MS MARCO-trained SPLADE-tiny (pipelines/benchmarks/
# scifact-splade-tiny.yaml: BM25, splade-tiny zero-shot, RRF, a weighted sum tuned on the train queries,
# significance, efficiency), then the HTML report with its plots. Everything is cached in $WORK: a rerun is fast.
# fp32 everywhere (the same numbers on any CPU or GPU); DEVICE=auto (default: CUDA when present) | cpu | cuda:N.
set -euo pipefail
WORK=${WORK:-work}
OUT=${OUT:-$WORK/quickstart}
CONFIG=${CONFIG:-pipelines/benchmarks/scifact-splade-tiny.yaml}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
python -m lsr_eval.cli benchmark "$CONFIG" --work-dir "$WORK" --out "$OUT/results/scifact" --device "${DEVICE:-auto}"
python -m lsr_eval.cli report "$OUT/results" --out "$OUT/report" --overwrite
echo "quickstart: report at $OUT/report/index.html"
