#!/usr/bin/env bash
# Fine-tune the offline MS MARCO-trained SPLADE-tiny on SciFact train, pre-registered in
# pipelines/train/scifact-splade-tiny.yaml (read its header): dev split carved from train, hard negatives from BM25
# and from splade-tiny itself, then dev evaluation; the test numbers come from
#   lsr-eval benchmark pipelines/benchmarks/scifact-splade-tiny-finetuned.yaml --work-dir work
# Logs and manifests go under results/train/, the model under the git-ignored work/.
#
#   pipelines/finetune_splade_tiny.sh [--overwrite]      # extra arguments go to lsr-eval train
#   NAME=scifact-splade-tiny-bt pipelines/finetune_splade_tiny.sh   # the BT-SPLADE-style pair (separate encoders)
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
SCIFACT=$SHARED/beir/scifact
WORK=${WORK:-work}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
NAME=${NAME:-scifact-splade-tiny}
CONFIG=pipelines/train/$NAME.yaml

. pipelines/scifact_train_inputs.sh
# 3. training
lsr-eval train "$CONFIG" "${TRAIN_INPUTS[@]}" --set "output.model_dir=$WORK/train/$NAME" "$@"
# 4. dev split only (never test): the fine-tuned model against zero-shot splade-tiny
for M in splade-tiny "$WORK/train/$NAME/model"; do
    TAG=$( [ "$M" = splade-tiny ] && echo zero-shot || echo finetuned )
    lsr-eval splade "$M" "$WORK/scifact-dev" --split dev --doc-top-k 1024 --query-top-k 256 \
        --out "$WORK/dev/$NAME-$TAG" --work-dir "$WORK"
done
