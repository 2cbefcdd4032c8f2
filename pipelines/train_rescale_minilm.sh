#!/usr/bin/env bash
# Rescaling comparison on SciFact from all-MiniLM-L6-v2 with the MLM head "as loaded" (head_init: random =
# transformers' random transform; the checkpoint has none): k = 1, the suggested k, and 16 (the paper's value for
# ModernBERT/Ettin), same recipe and budget (pipelines/train/scifact-minilm-rescale.yaml, 100 steps).
#
#   pipelines/train_rescale_minilm.sh              # results/train/scifact-minilm-rescale-k<K>, work/train/...
#   KS="1 4" pipelines/train_rescale_minilm.sh     # other factors ("suggested" is resolved first)
#   SMOKE=1 pipelines/train_rescale_minilm.sh      # 10 steps each, all under work/train/...-smoke
#   TIED_INPUT=compensated KS=16 pipelines/train_rescale_minilm.sh   # keep the encoder input (docs/models.md):
#                                                  # runs are named ...-k16-compensated
#
# The suggested k is read from `lsr-eval inspect-head` on the same head; a k already in the list is run once.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
SCIFACT=$SHARED/beir/scifact
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

MINILM=$(python -c "from lsr_eval.models import minilm_path; print(minilm_path())")
TIED_INPUT=${TIED_INPUT:-divided}
SUGGESTED=$(lsr-eval inspect-head "$MINILM" --head-init random --tied-input "$TIED_INPUT" --json 2>/dev/null \
            | python -c "import json, sys; print(json.load(sys.stdin)['suggested_k'])")
echo "suggested k for all-MiniLM-L6-v2 with a random head: $SUGGESTED"

WORK=work
. pipelines/scifact_bm25_train.sh   # hard negatives: BM25 top 100 of each train query
KS=${KS:-"1 suggested 16"}
DONE=" "
for K in $KS; do
    [ "$K" = suggested ] && K=$SUGGESTED
    case "$DONE" in *" $K "*) echo "k=$K already in the list: skipped"; continue;; esac
    DONE="$DONE$K "
    NAME=scifact-minilm-rescale-k$K
    [ "$TIED_INPUT" = divided ] || NAME=$NAME-$TIED_INPUT
    ARGS=(--set "model.rescale_k=$K" --set "model.tied_input=$TIED_INPUT" --set "data.dataset=$SCIFACT"
          --set "data.negatives=$BM25/run.trec")
    if [ "${SMOKE:-0}" = 1 ]; then
        NAME=$NAME-smoke
        ARGS+=(--set train.steps=10 --set train.checkpoint_every=5 --set regularizer.warmup_q=3
               --set regularizer.warmup_d=3 --set optim.warmup_steps=2 --overwrite)
    fi
    OUT=results/train/$NAME
    if [ "${SMOKE:-0}" = 1 ]; then OUT=work/train/$NAME/results; fi   # smoke runs stay out of results/
    ARGS+=(--set "name=$NAME" --set "output.dir=$OUT" --set "output.model_dir=work/train/$NAME")
    lsr-eval train pipelines/train/scifact-minilm-rescale.yaml "${ARGS[@]}" "$@"
done
