#!/usr/bin/env bash
# Exploratory controls of the confirmatory NFCorpus rescaling study, pre-registered in
# docs/studies/confirm-rescale-nfcorpus-controls.md (with this driver, studies/confirm_rescale_nfcorpus/controls.py
# and pipelines/train/confirm-controls-*-900.yaml) before any of their runs.
#
#   pipelines/confirm_rescale_controls.sh backbone   # the study's MLM-trained MiniLM when work/ lacks it (its logs go
#                                                    # to work/, the committed ones stay as they are)
#   pipelines/confirm_rescale_controls.sh step0      # 1. each arm's untrained model on NFCorpus dev and test
#   pipelines/confirm_rescale_controls.sh long       # 2. k1 and k16-compensated, seed 1, 900 steps, side by side
#                                                    #    (stopped at 800 to save checkpoints 100..800 as models,
#                                                    #    then resumed); then dev at step 900, then 100, ..., 800
#   pipelines/confirm_rescale_controls.sh summary    # the numbers beside the confirmatory study's (summary.json/.md)
#   pipelines/confirm_rescale_controls.sh all        # in that order
#
# Every stage resumes: a training continues from its newest checkpoint, a search whose manifest exists is skipped.
# JOBS (default 2) single-thread parts at once. Results go under results/ (written from a clean checkout: run it in a
# worktree of the registration commit, e.g. `git worktree add --detach ../wt HEAD` with work/ linked in), models
# under work/. LSR_EVAL overrides the command (e.g. LSR_EVAL="python -m lsr_eval.cli").
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
NFCORPUS=$SHARED/beir/nfcorpus
WORK=${WORK:-work}
JOBS=${JOBS:-2}
read -r -a LSR <<< "${LSR_EVAL:-lsr-eval}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

BACKBONE=$WORK/train/rescale-mlm-minilm-mlm/model
ARMS="k1 k2-compensated k4-compensated k8-compensated k16-compensated k2-divided"
LONG_ARMS="k1 k16-compensated"
OUT=results/studies/confirm-rescale-nfcorpus-controls
CONTROLS=studies/confirm_rescale_nfcorpus/controls.py
# The confirmatory study's search settings, unchanged
SEARCH=(--max-length-q 64 --max-length-d 128 --doc-top-k 256 --query-top-k 64 --precision fp32 --hits 1000
        --threads 1 --run-file run.trec.xz)

search() {   # model split out: one NFCorpus split, evaluated
    [ -f "$3/manifest.json" ] && return 0
    "${LSR[@]}" splade "$1" "$NFCORPUS" --split "$2" "${SEARCH[@]}" --out "$3" --work-dir "$WORK"
}

wait_slot() { while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || failed=1; done; }
wait_all() { while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done; }

stage_backbone() {
    [ -d "$BACKBONE" ] && return 0
    for name in rescale-mlm-minilm-head rescale-mlm-minilm-mlm; do
        local flag=""
        [ -d "$WORK/train/$name/checkpoints" ] && flag=--resume
        OMP_NUM_THREADS=2 "${LSR[@]}" middle-train "pipelines/train/$name.yaml" \
            --set "output.dir=$WORK/backbone-rebuild/$name" $flag
    done
}

step0_part() {   # arm
    local model=$WORK/controls/step0/$1/model log=$WORK/logs/controls-step0-$1.out
    [ -f "$OUT/step0/$1/test/manifest.json" ] && return 0
    mkdir -p "$WORK/logs"
    { [ -f "$model/config.json" ] || python "$CONTROLS" step0 "pipelines/train/confirm-nfcorpus-$1.yaml" --out "$model"
      search "$model" dev "$OUT/step0/$1/dev" && search "$model" test "$OUT/step0/$1/test"; } > "$log" 2>&1 \
        || { echo "step0 $1 failed: see $log" >&2; return 1; }
    echo "step0 $1: done"
}

stage_step0() {
    [ -d "$BACKBONE" ] || { echo "no backbone at $BACKBONE: run '$0 backbone' first" >&2; exit 1; }
    failed=0
    for arm in $ARMS; do wait_slot; step0_part "$arm" & done
    wait_all
    return $failed
}

curve_point() {   # arm step: the dev search of one point of the learning curve
    local run=confirm-controls-$1-900-s1 dir
    dir=$OUT/long/$1/$(printf 'step-%04d' "$2")/dev
    [ -f "$dir/manifest.json" ] && return 0
    local model=$WORK/train/$run/model
    [ "$2" = 900 ] || model=$WORK/controls/long/$1/step-$2/model
    search "$model" dev "$dir"
}

snapshots() {   # arm: the models of checkpoints 100..800 (a finished training drops its checkpoints)
    local run=confirm-controls-$1-900-s1 step model
    for step in 100 200 300 400 500 600 700 800; do
        model=$WORK/controls/long/$1/step-$step/model
        [ -f "$model/config.json" ] || python "$CONTROLS" snapshot "pipelines/train/confirm-controls-$1-900.yaml" \
            "$WORK/train/$run/checkpoints/$(printf 'step-%08d' "$step")" --out "$model"
    done
}

long_part() {   # arm: train to step 800 (resuming) and stop, save checkpoints 100..800 as models, train on to 900,
                # then the curve: the dev search at step 900 first, then 100..800
    local run=confirm-controls-$1-900-s1 log=$WORK/logs/controls-long-$1.out config
    config=pipelines/train/confirm-controls-$1-900.yaml
    mkdir -p "$WORK/logs"
    resume() { if [ -d "$WORK/train/$run/checkpoints" ] || [ -d "$WORK/train/$run/model" ]; then echo --resume; fi; }
    { if [ ! -d "$WORK/train/$run/model" ]; then
          "${LSR[@]}" train "$config" --set train.progress=false --stop-after 800 $(resume) && snapshots "$1" &&
          "${LSR[@]}" train "$config" --set train.progress=false --resume
      fi &&
      for step in 900 100 200 300 400 500 600 700 800; do curve_point "$1" "$step"; echo "$1 step $step: searched"; done
    } >> "$log" 2>&1 || { echo "long $1 failed: see $log" >&2; return 1; }
    echo "long $1: done"
}

stage_long() {
    [ -d "$BACKBONE" ] || { echo "no backbone at $BACKBONE: run '$0 backbone' first" >&2; exit 1; }
    [ -s "$WORK/bm25-nfcorpus-train/run.trec" ] || \
        "${LSR[@]}" bm25 "$NFCORPUS" --split train --hits 100 --out "$WORK/bm25-nfcorpus-train" --work-dir "$WORK"
    failed=0
    for arm in $LONG_ARMS; do wait_slot; long_part "$arm" & done
    wait_all
    return $failed
}

stage_summary() {
    python "$CONTROLS" summary --controls "$OUT" --dev results/benchmarks/confirm-rescale-nfcorpus-dev \
        --test results/benchmarks/confirm-rescale-nfcorpus-test
}

case "${1:-}" in
    backbone|step0|long|summary) "stage_$1" ;;
    all) stage_backbone; stage_step0; stage_long; stage_summary ;;
    *) echo "usage: $0 backbone|step0|long|summary|all" >&2; exit 2 ;;
esac
