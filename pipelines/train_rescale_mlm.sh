#!/usr/bin/env bash
# The rescaling study on a real MLM head (docs/training.md, "Rescaling on a real MLM head").
#
#   pipelines/train_rescale_mlm.sh head       # 1. complete all-MiniLM-L6-v2's MLM head by MLM (middle-train): the
#                                             #    head alone on the frozen encoder, then every parameter
#   pipelines/train_rescale_mlm.sh heldout    #    held-out masked-token accuracy / perplexity vs the identity head
#   pipelines/train_rescale_mlm.sh inspect    # 2. inspect-head: the MLM, the head-only stage, the identity head, splade-tiny
#   pipelines/train_rescale_mlm.sh grid       # 3. SPLADE fine-tuning, one run per pipelines/train/rescale-mlm-minilm-k*.yaml
#   pipelines/train_rescale_mlm.sh dev        #    each final model on the 100-query dev split (never test)
#   pipelines/train_rescale_mlm.sh test       #    once, on SciFact test: pipelines/benchmarks/scifact-rescale-mlm.yaml
#   pipelines/train_rescale_mlm.sh all        # every stage in order
#
# Every training stage resumes from its newest checkpoint when one exists (a killed run continues where it stopped),
# and a finished run is not trained again. Logs and manifests go under results/ (commit first: results are written
# from clean commits only), checkpoints and models under the git-ignored work/. LSR_EVAL overrides the command
# (e.g. LSR_EVAL="python -m lsr_eval.cli"); RUNS="k1 k4" limits the grid, dev and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
SCIFACT=$SHARED/beir/scifact
WORK=${WORK:-work}
read -r -a LSR <<< "${LSR_EVAL:-lsr-eval}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

HEAD_CFG=pipelines/train/rescale-mlm-minilm-head.yaml      # stage 1: the head alone, encoder frozen
HEAD_RUN=rescale-mlm-minilm-head
HEAD_MODEL=$WORK/train/$HEAD_RUN/model
MLM_CFG=pipelines/train/rescale-mlm-minilm-mlm.yaml        # stage 2: every parameter (the grid's backbone)
MLM_RUN=rescale-mlm-minilm-mlm
MLM_MODEL=$WORK/train/$MLM_RUN/model
DEV=$WORK/scifact-dev
EVAL_ARGS=(--max-length-q 64 --max-length-d 128 --doc-top-k 256 --query-top-k 64)   # as training; the benchmark's

resume_flag() {   # --resume when the model folder holds checkpoints or a final model
    if [ -d "$WORK/train/$1/checkpoints" ] || [ -d "$WORK/train/$1/model" ]; then echo --resume; fi
}

grid_runs() {   # the pre-registered grid (pipelines/train/rescale-mlm-minilm-base.yaml), in this order
    for r in ${RUNS:-k1 k2 k4 k8 k16 suggested-compensated}; do echo "rescale-mlm-minilm-$r"; done
}

suggested_k() {   # inspect-head's suggestion for the trained head with the compensated input
    python -c "import json, sys; print(json.load(open(sys.argv[1]))['suggested_k'])" \
        "results/train/$MLM_RUN/inspect-head/mlm-compensated/diagnosis.json"
}

stage_head() {
    "${LSR[@]}" middle-train "$HEAD_CFG" $(resume_flag "$HEAD_RUN")
    "${LSR[@]}" middle-train "$MLM_CFG" $(resume_flag "$MLM_RUN")
}

stage_heldout() {   # the same held-out texts and masks for every model (both configs share their data section)
    "${LSR[@]}" mlm-eval "$MLM_CFG" identity-head=minilm head-only="$HEAD_MODEL" mlm="$MLM_MODEL" \
        --out "results/train/$MLM_RUN/heldout"
}

stage_inspect() {
    local out=results/train/$MLM_RUN/inspect-head
    "${LSR[@]}" inspect-head "$MLM_MODEL" --out "$out/mlm"
    "${LSR[@]}" inspect-head "$MLM_MODEL" --tied-input compensated --out "$out/mlm-compensated"
    "${LSR[@]}" inspect-head "$HEAD_MODEL" --out "$out/head-only"
    "${LSR[@]}" inspect-head minilm --out "$out/identity-head"
    "${LSR[@]}" inspect-head splade-tiny --out "$out/splade-tiny"
}

stage_grid() {
    [ -f "$DEV/qrels/dev.tsv" ] || "${LSR[@]}" carve-dev "$SCIFACT" --n 100 --seed 0 --out "$DEV"
    . pipelines/scifact_bm25_train.sh
    for run in $(grid_runs); do
        if [ "$run" = rescale-mlm-minilm-suggested-compensated ] && [ "$(suggested_k)" = 1 ]; then
            echo "suggested k = 1: the compensated run equals rescale-mlm-minilm-k1 (not trained twice)"; continue
        fi
        "${LSR[@]}" train "pipelines/train/$run.yaml" $(resume_flag "$run")
    done
}

stage_dev() {
    for run in $(grid_runs); do
        [ -f "results/train/$run/dev/metrics.json" ] && continue
        if [ ! -d "$WORK/train/$run/model" ]; then echo "$run: no final model (not trained): no dev evaluation"; continue; fi
        "${LSR[@]}" splade "$WORK/train/$run/model" "$DEV" --split dev "${EVAL_ARGS[@]}" \
            --out "results/train/$run/dev" --work-dir "$WORK"
        # metrics and manifest stay with the run; its run file (3.6 MB) and query vectors go to the work folder
        mkdir -p "$WORK/dev-runs/$run"
        mv "results/train/$run/dev/run.trec" "results/train/$run/dev/queries" "$WORK/dev-runs/$run/"
    done
}

stage_test() {
    "${LSR[@]}" benchmark pipelines/benchmarks/scifact-rescale-mlm.yaml --work-dir "$WORK"
}

case "${1:-}" in
    head|heldout|inspect|grid|dev|test) "stage_$1" ;;
    all) stage_head; stage_heldout; stage_inspect; stage_grid; stage_dev; stage_test ;;
    *) echo "usage: $0 head|heldout|inspect|grid|dev|test|all" >&2; exit 2 ;;
esac
