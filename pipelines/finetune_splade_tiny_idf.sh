#!/usr/bin/env bash
# Fine-tune splade-tiny's document encoder against fixed IDF query weights on SciFact train, pre-registered in
# pipelines/train/scifact-splade-tiny-idf.yaml (read its header): the dev split and hard negatives of
# pipelines/finetune_splade_tiny.sh, training, then the dev evaluation of both candidates (never test). The test
# number, if dev selects the fine-tuned model, comes from
#   lsr-eval benchmark pipelines/benchmarks/scifact-splade-tiny-idf-finetuned.yaml --work-dir work
#
#   pipelines/finetune_splade_tiny_idf.sh [--overwrite]      # extra arguments go to lsr-eval train
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
SCIFACT=$SHARED/beir/scifact
WORK=${WORK:-work}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LSR_EVAL_WORK=$WORK
NAME=scifact-splade-tiny-idf
# 1-2. dev split and hard negatives, as for the standard fine-tune
. pipelines/scifact_train_inputs.sh
# 3. training (the IDF is counted on data.dataset's corpus and cached under $WORK/idf)
lsr-eval train "pipelines/train/$NAME.yaml" "${TRAIN_INPUTS[@]}" --set "output.model_dir=$WORK/train/$NAME" "$@"
# 4. dev split only (never test): zero-shot documents with IDF queries, and the fine-tuned documents (whose saved
#    model holds the same IDF query encoder)
lsr-eval splade splade-tiny "$WORK/scifact-dev" --split dev --query-model idf --doc-top-k 1024 --query-top-k 256 \
    --out "$WORK/dev/$NAME-zero-shot" --work-dir "$WORK"
lsr-eval splade "$WORK/train/$NAME/model" "$WORK/scifact-dev" --split dev --doc-top-k 1024 --query-top-k 256 \
    --out "$WORK/dev/$NAME-finetuned" --work-dir "$WORK"
