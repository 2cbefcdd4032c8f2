#!/usr/bin/env bash
# The confirmatory rescaling study on NFCorpus, pre-registered (docs/studies/confirm-rescale-nfcorpus.md; configs
# pipelines/train/confirm-nfcorpus-*.yaml, benchmarks pipelines/benchmarks/confirm-rescale-nfcorpus-{dev,test}.yaml),
# as amended before its first run ("Amendment" in that document: each run searched on dev and test while its model
# exists, every part committed as it finishes, the test table once, after the dev table and the dev choice).
#
#   pipelines/confirm_rescale_nfcorpus.sh backbone   # 0. the SciFact study's MLM-trained MiniLM, when work/ lacks it
#                                                    #    (pipelines/train_rescale_mlm.sh head; outside the budget)
#   pipelines/confirm_rescale_nfcorpus.sh inspect    # 1. inspect-head on the backbone, tied input compensated (H2)
#   pipelines/confirm_rescale_nfcorpus.sh runs       # 2. BM25 negatives on NFCorpus train, then each of the 6 arms x 3
#                                                    #    seeds: train, search dev (evaluated) and test (--no-eval: no
#                                                    #    label read, no number), commit the part
#   pipelines/confirm_rescale_nfcorpus.sh dev        # 3. the dev table from the committed dev runs (19 rows with BM25)
#   pipelines/confirm_rescale_nfcorpus.sh choose     # 4. the registered rule on the dev table: dev-choice.json
#   pipelines/confirm_rescale_nfcorpus.sh test       # 5. the test table from the committed test runs, ONCE (refused
#                                                    #    before 19 ok dev rows and the dev choice, and when done)
#   pipelines/confirm_rescale_nfcorpus.sh report     # 6. lsr-eval report results --out results/report
#   pipelines/confirm_rescale_nfcorpus.sh all        # every stage in order
#
# Every stage resumes: a training restarts from its newest checkpoint (every 20 steps; a finished run is not trained
# again), a part whose dev and test runs are committed is skipped, and an encoding resumes by shard. JOBS (default 2)
# runs that many single-thread parts at once, the budget's premise. Results go under results/ from a clean checkout
# (the manifests name the commit), models under work/. COMMIT=0 leaves the commits to the caller. LSR_EVAL overrides
# the command (e.g. LSR_EVAL="python -m lsr_eval.cli"); ARMS="k1 k2-divided" limits the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
NFCORPUS=$SHARED/beir/nfcorpus
WORK=${WORK:-work}
JOBS=${JOBS:-2}
COMMIT=${COMMIT:-1}
read -r -a LSR <<< "${LSR_EVAL:-lsr-eval}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

BACKBONE=$WORK/train/rescale-mlm-minilm-mlm/model    # model.path of pipelines/train/confirm-nfcorpus-base.yaml
ARMS=${ARMS:-k1 k2-compensated k4-compensated k8-compensated k16-compensated k2-divided}
SEEDS="1 2 3"                                        # each arm's seeds list
STUDY=results/studies/confirm-rescale-nfcorpus       # per-run searches, the dev choice
DEV_BENCH=pipelines/benchmarks/confirm-rescale-nfcorpus-dev.yaml
TEST_BENCH=pipelines/benchmarks/confirm-rescale-nfcorpus-test.yaml
DEV_TABLE=results/benchmarks/confirm-rescale-nfcorpus-dev
TEST_TABLE=results/benchmarks/confirm-rescale-nfcorpus-test
ANALYSIS=studies/confirm_rescale_nfcorpus/analysis.py
# The search settings of every run: the training's lengths, top-256 document / top-64 query terms, fp32, depth 1000
SEARCH=(--max-length-q 64 --max-length-d 128 --doc-top-k 256 --query-top-k 64 --precision fp32 --hits 1000
        --threads 1 --run-file run.trec.xz)

commit() {   # message path...: commit those paths alone (parallel parts take turns on the index)
    [ "$COMMIT" = 1 ] || return 0
    local msg=$1; shift
    flock "$WORK/.study-commit.lock" bash -c 'git add -- "$@" && git commit -q -m "$0" -- "$@"' "$msg" "$@"
}

stage_backbone() {
    [ -d "$BACKBONE" ] || pipelines/train_rescale_mlm.sh head
}

stage_inspect() {
    [ -f results/train/confirm-nfcorpus-inspect-head/manifest.json ] && return 0
    "${LSR[@]}" inspect-head "$BACKBONE" --tied-input compensated --out results/train/confirm-nfcorpus-inspect-head
    commit "confirm-rescale-nfcorpus: inspect-head on the backbone, tied input compensated" \
        results/train/confirm-nfcorpus-inspect-head
}

search_one() {   # run split [--no-eval]: the run's final model on one NFCorpus split
    local out=$STUDY/runs/$1/$2
    [ -f "$out/manifest.json" ] && return 0
    "${LSR[@]}" splade "$WORK/train/$1/model" "$NFCORPUS" --split "$2" "${SEARCH[@]}" "${@:3}" \
        --out "$out" --work-dir "$WORK"
}

part() {   # arm seed: train one seed of an arm, search dev and test with its final model, commit the part
    local run=confirm-nfcorpus-$1-s$2 t0=$SECONDS
    local log=$WORK/logs/$run.out
    if [ -f "$STUDY/runs/$run/test/manifest.json" ]; then return 0; fi
    { "${LSR[@]}" train "pipelines/train/confirm-nfcorpus-$1.yaml" --set "seeds=[$2]" --set train.progress=false \
          --resume && search_one "$run" dev && search_one "$run" test --no-eval; } > "$log" 2>&1 \
        || { echo "$run failed: see $log" >&2; return 1; }
    echo "$run: trained and searched in $((SECONDS - t0)) s"
    commit "confirm-rescale-nfcorpus: $run trained ($((SECONDS - t0)) s for the part), its dev run evaluated, its test run written unread" \
        "results/train/$run" "$STUDY/runs/$run"
}

stage_runs() {
    [ -d "$BACKBONE" ] || { echo "no backbone at $BACKBONE: run '$0 backbone' first" >&2; exit 1; }
    [ -s "$WORK/bm25-nfcorpus-train/run.trec" ] || \
        "${LSR[@]}" bm25 "$NFCORPUS" --split train --hits 100 --out "$WORK/bm25-nfcorpus-train" --work-dir "$WORK"
    mkdir -p "$WORK/logs"
    local failed=0
    for seed in $SEEDS; do          # seed-major: the first seeds of every arm come first
        for arm in $ARMS; do
            while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || failed=1; done
            part "$arm" "$seed" &
        done
    done
    while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
    return $failed
}

stage_dev() {
    [ -f "$DEV_TABLE/manifest.json" ] && return 0
    OMP_NUM_THREADS=2 "${LSR[@]}" benchmark "$DEV_BENCH" --work-dir "$WORK"
    commit "confirm-rescale-nfcorpus: the dev table, from the committed dev runs" "$DEV_TABLE"
}

stage_choose() {
    [ -f "$DEV_TABLE/manifest.json" ] || { echo "no dev table yet ($DEV_TABLE): run '$0 dev' first" >&2; exit 1; }
    [ -f "$STUDY/dev-choice.json" ] && return 0
    python "$ANALYSIS" choose --study "$STUDY" --dev "$DEV_TABLE"
    commit "confirm-rescale-nfcorpus: the dev choice by the registered rule (no test number read)" \
        "$STUDY/dev-choice.json"
}

stage_test() {
    [ -f "$STUDY/dev-choice.json" ] || \
        { echo "no dev choice yet ($STUDY/dev-choice.json): run '$0 choose' first" >&2; exit 1; }
    [ ! -f "$TEST_TABLE/manifest.json" ] || { echo "$TEST_TABLE exists: the test set is evaluated once" >&2; exit 1; }
    python "$ANALYSIS" ready-for-test --study "$STUDY" --dev "$DEV_TABLE"   # 19 ok dev rows, every test run unread
    OMP_NUM_THREADS=2 "${LSR[@]}" benchmark "$TEST_BENCH" --work-dir "$WORK"
    commit "confirm-rescale-nfcorpus: the test table, once, from the committed test runs" "$TEST_TABLE"
}

stage_report() {
    "${LSR[@]}" report results --out results/report --overwrite
}

case "${1:-}" in
    backbone|inspect|runs|dev|choose|test|report) "stage_$1" ;;
    all) stage_backbone; stage_inspect; stage_runs; stage_dev; stage_choose; stage_test; stage_report ;;
    *) echo "usage: $0 backbone|inspect|runs|dev|choose|test|report|all" >&2; exit 2 ;;
esac
