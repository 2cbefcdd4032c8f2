#!/usr/bin/env bash
# The confirmatory rescaling study on NFCorpus, pre-registered (docs/studies/confirm-rescale-nfcorpus.md; configs
# pipelines/train/confirm-nfcorpus-*.yaml, benchmarks pipelines/benchmarks/confirm-rescale-nfcorpus-{dev,test}.yaml).
#
#   pipelines/confirm_rescale_nfcorpus.sh backbone   # 0. the SciFact study's MLM-trained MiniLM, when work/ lacks it
#                                                    #    (pipelines/train_rescale_mlm.sh head: ~72 min, outside the budget)
#   pipelines/confirm_rescale_nfcorpus.sh inspect    # 1. inspect-head on the backbone, tied input compensated (H2)
#   pipelines/confirm_rescale_nfcorpus.sh train      # 2. BM25 negatives on NFCorpus train, then the 6 arms x 3 seeds
#   pipelines/confirm_rescale_nfcorpus.sh dev        # 3. every run on NFCorpus dev (the selection split)
#   pipelines/confirm_rescale_nfcorpus.sh test       # 4. every run on NFCorpus test, ONCE (refused when done)
#   pipelines/confirm_rescale_nfcorpus.sh report     # 5. lsr-eval report results --out results/report
#   pipelines/confirm_rescale_nfcorpus.sh all        # every stage in order
#
# Every training resumes after a kill: each seed's run is started with --resume (from its newest checkpoint, every
# 20 steps; from step 0 when it has none; a finished run is not trained again), so rerunning a stage continues it.
# Encodings resume by shard. JOBS (default 2) runs that many single-thread trainings at once, the budget's premise.
# Logs and manifests go under results/ (commit first: results come from clean commits), models under work/.
# LSR_EVAL overrides the command (e.g. LSR_EVAL="python -m lsr_eval.cli"); ARMS="k1 k2-divided" limits training.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
NFCORPUS=$SHARED/beir/nfcorpus
WORK=${WORK:-work}
JOBS=${JOBS:-2}
read -r -a LSR <<< "${LSR_EVAL:-lsr-eval}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

BACKBONE=$WORK/train/rescale-mlm-minilm-mlm/model    # model.path of pipelines/train/confirm-nfcorpus-base.yaml
ARMS=${ARMS:-k1 k2-compensated k4-compensated k8-compensated k16-compensated k2-divided}
SEEDS="1 2 3"                                        # each arm's seeds list
DEV_BENCH=pipelines/benchmarks/confirm-rescale-nfcorpus-dev.yaml
TEST_BENCH=pipelines/benchmarks/confirm-rescale-nfcorpus-test.yaml

stage_backbone() {
    [ -d "$BACKBONE" ] || pipelines/train_rescale_mlm.sh head
}

stage_inspect() {
    "${LSR[@]}" inspect-head "$BACKBONE" --tied-input compensated --out results/train/confirm-nfcorpus-inspect-head
}

train_one() {   # arm seed: one seed's run of an arm's config
    "${LSR[@]}" train "pipelines/train/confirm-nfcorpus-$1.yaml" --set "seeds=[$2]" --set train.progress=false \
        --resume > "$WORK/logs/confirm-nfcorpus-$1-s$2.out" 2>&1 || { echo "confirm-nfcorpus-$1-s$2 failed: see $WORK/logs/confirm-nfcorpus-$1-s$2.out" >&2; return 1; }
    tail -1 "$WORK/logs/confirm-nfcorpus-$1-s$2.out"
}

stage_train() {
    [ -d "$BACKBONE" ] || { echo "no backbone at $BACKBONE: run '$0 backbone' first" >&2; exit 1; }
    [ -s "$WORK/bm25-nfcorpus-train/run.trec" ] || \
        "${LSR[@]}" bm25 "$NFCORPUS" --split train --hits 100 --out "$WORK/bm25-nfcorpus-train" --work-dir "$WORK"
    mkdir -p "$WORK/logs"
    local failed=0
    for arm in $ARMS; do
        for seed in $SEEDS; do
            while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || failed=1; done
            train_one "$arm" "$seed" &
        done
    done
    while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
    return $failed
}

stage_dev() {
    OMP_NUM_THREADS=2 "${LSR[@]}" benchmark "$DEV_BENCH" --work-dir "$WORK"
}

stage_test() {
    [ -f results/benchmarks/confirm-rescale-nfcorpus-dev/manifest.json ] || \
        { echo "no dev evaluation yet (results/benchmarks/confirm-rescale-nfcorpus-dev): run '$0 dev' first" >&2; exit 1; }
    [ ! -f results/benchmarks/confirm-rescale-nfcorpus-test/manifest.json ] || \
        { echo "results/benchmarks/confirm-rescale-nfcorpus-test exists: the test set is evaluated once" >&2; exit 1; }
    OMP_NUM_THREADS=2 "${LSR[@]}" benchmark "$TEST_BENCH" --work-dir "$WORK"
}

stage_report() {
    "${LSR[@]}" report results --out results/report --overwrite
}

case "${1:-}" in
    backbone|inspect|train|dev|test|report) "stage_$1" ;;
    all) stage_backbone; stage_inspect; stage_train; stage_dev; stage_test; stage_report ;;
    *) echo "usage: $0 backbone|inspect|train|dev|test|report|all" >&2; exit 2 ;;
esac
