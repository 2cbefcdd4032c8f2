#!/usr/bin/env bash
# Fine-tune the offline MS MARCO-trained SPLADE-tiny on NFCorpus train, pre-registered in
# pipelines/train/nfcorpus-splade-tiny.yaml (read its header): NFCorpus's official train split for training, hard
# negatives from BM25 and from splade-tiny itself, then a dev evaluation (official dev split, never test); the test
# numbers come from
#   lsr-eval benchmark pipelines/benchmarks/nfcorpus-splade-tiny-finetuned.yaml --work-dir work
# Logs and manifests go under results/train/, the model under the git-ignored work/. Resumable: rerun with
# --resume (extra arguments go to lsr-eval train).
#
#   pipelines/finetune_splade_tiny_nfcorpus.sh [--resume | --overwrite]
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
WORK=${WORK:-work}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export IR_DATASETS_HOME=${IR_DATASETS_HOME:-$PWD/$WORK/ir_datasets}
NAME=nfcorpus-splade-tiny
CONFIG=pipelines/train/$NAME.yaml

# 0. nfcorpus, nfcorpus/dev and nfcorpus/train offline: the ir_datasets cache seeded from the shared copy
[ -f "$IR_DATASETS_HOME/beir/nfcorpus/source.zip" ] || lsr-eval seed-irds "$SHARED/ir_datasets"
# 1. hard negatives: BM25 and splade-tiny (zero-shot, the benchmark's settings) top 100 of every train query
[ -s "$WORK/bm25-nfcorpus-train/run.trec" ] || \
    lsr-eval bm25 nfcorpus --split train --hits 100 --out "$WORK/bm25-nfcorpus-train" --work-dir "$WORK"
[ -s "$WORK/splade-tiny-nfcorpus-train/run.trec" ] || \
    lsr-eval splade splade-tiny nfcorpus --split train --hits 100 --doc-top-k 1024 --query-top-k 256 \
        --out "$WORK/splade-tiny-nfcorpus-train" --work-dir "$WORK"
# 2. training
lsr-eval train "$CONFIG" \
    --set "data.negatives=[$WORK/bm25-nfcorpus-train/run.trec, $WORK/splade-tiny-nfcorpus-train/run.trec]" \
    --set "output.model_dir=$WORK/train/$NAME" "$@"
# 3. dev split only (never test): the fine-tuned model against zero-shot splade-tiny, kept beside the training log
for M in splade-tiny "$WORK/train/$NAME/model"; do
    TAG=$( [ "$M" = splade-tiny ] && echo zero-shot || echo finetuned )
    lsr-eval splade "$M" nfcorpus --split dev --doc-top-k 1024 --query-top-k 256 \
        --out "$WORK/dev/$NAME-$TAG" --work-dir "$WORK"
    mkdir -p "results/train/$NAME/dev-$TAG"
    cp "$WORK/dev/$NAME-$TAG/metrics.json" "$WORK/dev/$NAME-$TAG/manifest.json" "results/train/$NAME/dev-$TAG/"
done
