# Sourced by pipelines/finetune_splade_tiny*.sh (with SCIFACT and WORK set): what a SciFact fine-tune trains on.
# 1. dev split: 100 of the 809 train queries (seed 0); training reads the other 709 ('fit')
[ -f "$WORK/scifact-dev/qrels/dev.tsv" ] || lsr-eval carve-dev "$SCIFACT" --n 100 --seed 0 --out "$WORK/scifact-dev"
# 2. hard negatives: BM25 and splade-tiny (zero-shot, the benchmark's settings) top 100 of every train query
. pipelines/scifact_bm25_train.sh
[ -s "$WORK/splade-tiny-scifact-train/run.trec" ] || \
    lsr-eval splade splade-tiny "$SCIFACT" --split train --hits 100 --doc-top-k 1024 --query-top-k 256 \
        --out "$WORK/splade-tiny-scifact-train" --work-dir "$WORK"
# 3. the training command's data settings
TRAIN_INPUTS=(--set "data.dataset=$WORK/scifact-dev"
              --set "data.negatives=[$BM25/run.trec, $WORK/splade-tiny-scifact-train/run.trec]")
