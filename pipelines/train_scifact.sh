#!/usr/bin/env bash
# SPLADE trained on SciFact train (809 queries) from the offline all-MiniLM-L6-v2 backbone with BM25 hard
# negatives: pipelines/train/scifact-minilm.yaml, sized for <= 30 minutes on 2 CPU cores.
#
#   pipelines/train_scifact.sh                 # full run: results/train/scifact-minilm, work/train/scifact-minilm
#   SMOKE=1 pipelines/train_scifact.sh         # 20 steps, all under work/train/scifact-minilm-smoke (step time)
#   EVAL=1 pipelines/train_scifact.sh          # then evaluate the model on SciFact test (lsr-eval splade; a
#                                              # short run leaves vectors dense: DOC_TOP_K/QUERY_TOP_K cap them)
#   pipelines/train_scifact.sh --resume        # extra arguments go to lsr-eval train (--resume, --set K=V, ...)
#
# Logs and manifests go under results/, checkpoints and the model under the git-ignored work/.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
SCIFACT=$SHARED/beir/scifact
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

NAME=scifact-minilm
WORK=work
. pipelines/scifact_bm25_train.sh   # hard negatives: BM25 top 100 of each train query
ARGS=(--set "data.dataset=$SCIFACT" --set "data.negatives=$BM25/run.trec")
if [ "${SMOKE:-0}" = 1 ]; then
    NAME=scifact-minilm-smoke
    ARGS+=(--set train.steps=20 --set train.checkpoint_every=10 --set regularizer.warmup_q=6
           --set regularizer.warmup_d=6 --set optim.warmup_steps=2 --overwrite)
fi
OUT=results/train/$NAME
if [ "${SMOKE:-0}" = 1 ]; then OUT=work/train/$NAME/results; fi   # smoke runs stay out of results/
ARGS+=(--set "name=$NAME" --set "output.dir=$OUT" --set "output.model_dir=work/train/$NAME")
lsr-eval train pipelines/train/scifact-minilm.yaml "${ARGS[@]}" "$@"

if [ "${EVAL:-0}" = 1 ]; then
    lsr-eval splade "work/train/$NAME/model" "$SCIFACT" --out "results/splade-scifact-$NAME" --work-dir work \
        --max-length-q 32 --max-length-d 256 --doc-top-k "${DOC_TOP_K:-1024}" --query-top-k "${QUERY_TOP_K:-256}"
fi
