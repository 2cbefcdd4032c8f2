#!/usr/bin/env bash
# The efficiency paper (Lassance & Clinchant, "An Efficiency Study for SPLADE Models"): middle-train DistilBERT,
# train the six efficient SPLADE models, evaluate them beside naver's released pairs and BM25. On a GPU machine or
# cluster with a network:
#
#   pipelines/paper_efficient_splade.sh check      # the first check: naver's released V-large and VI-BT-large on
#                                                  # MS MARCO dev against their model cards (within 0.2 RR@10 and
#                                                  # R@1000 points: pipelines/data/efficient-splade-model-cards.json);
#                                                  # a miss stops with one line (lsr-eval check-published)
#   pipelines/paper_efficient_splade.sh estimate   # GPU-hours of the six runs (a measured step time: see the README)
#   pipelines/paper_efficient_splade.sh data       # the teacher scores (hub: sentence-transformers/msmarco-hard-negatives)
#                                                  # as qid docid score lines, checked against pipelines/data/*.json
#   pipelines/paper_efficient_splade.sh middle     # naver's middle-trained DistilBERT (both encoders of V, the
#                                                  # documents of VI-BT and VI-doc) and BERTiny (VI-BT's queries):
#                                                  # mlm_flops.tar.gz (conf/efficient_splade/README.md), the paper's
#                                                  # models' start; its sha256 and file counts recorded on the first
#                                                  # download (pipelines/data/naver-mlm-flops.json), checked after
#   MIDDLE_FROM=ours pipelines/paper_efficient_splade.sh middle
#                                                  # ... or our MLM + FLOPS middle training of both (lsr-eval
#                                                  # middle-train); every trained run, and its rows in the paper's
#                                                  # table, says which (model.middle_from)
#   pipelines/paper_efficient_splade.sh train      # the eight configs (V, VI-BT x 3 sizes; VI-doc x 2), run after run
#                                                  # here (NPROC GPUs each, default 1)
#   LAUNCHER=slurm GPUS=4 TIME=48:00:00 PARTITION=gpu pipelines/paper_efficient_splade.sh train
#                                                  # ... or one SLURM array task per pending config (waits for it)
#   pipelines/paper_efficient_splade.sh evaluate   # pipelines/benchmarks/paper-efficient-splade.yaml
#   pipelines/paper_efficient_splade.sh report     # lsr-eval report results --out results/report
#   pipelines/paper_efficient_splade.sh all        # check, data, middle, train, evaluate, report: nothing trains
#                                                  # before the released pairs meet their cards
#   pipelines/paper_efficient_splade.sh all --skip-check   # (or SKIP_CHECK=1) goes on without the check, and
#                                                  # records that it was skipped (published-check.json beside the
#                                                  # check's results)
#
# A finished run is skipped and a killed one resumes. LSR_EVAL overrides the command (e.g. LSR_EVAL="python -m
# lsr_eval.cli"); STEP_TIME=SECONDS gives the estimate a step time. Latency is timed on MS MARCO dev only
# (paper-efficient-splade.yaml's efficiency.latency_datasets).
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a LSR <<< "${LSR_EVAL:-lsr-eval}"
CONFIGS=()
for size in small medium large; do
    CONFIGS+=("pipelines/train/efficient-splade-V-$size.yaml" "pipelines/train/efficient-splade-VI-BT-$size.yaml")
done
CONFIGS+=(pipelines/train/efficient-splade-VI-doc-small.yaml pipelines/train/efficient-splade-VI-doc-medium.yaml)
MIDDLE=(pipelines/train/middle-distilbert-msmarco.yaml pipelines/train/middle-bert-tiny-msmarco.yaml)
BENCH=pipelines/benchmarks/paper-efficient-splade.yaml
RELEASED=pipelines/benchmarks/efficient-splade-released.yaml   # the first check: naver's released pairs
CARDS=pipelines/data/efficient-splade-model-cards.json         # ... against their model cards
SKIP_CHECK=${SKIP_CHECK:-0}
STAGE=all
for arg in "$@"; do
    case "$arg" in
        --skip-check) SKIP_CHECK=1 ;;
        -*) echo "unknown option $arg; usage: $0 [check|estimate|data|middle|train|evaluate|report|all] [--skip-check]" >&2
            exit 2 ;;
        *) STAGE=$arg ;;
    esac
done
TEACHER=work/data/msmarco-train-ce-minilm-l6-v2-scores.tsv   # what pipelines/train/efficient-splade-base.yaml reads

first_check() {  # a miss (or a failed row) stops the chain with check-published's one line
    if [ "$SKIP_CHECK" = 1 ]; then "${LSR[@]}" check-published "$RELEASED" --expect "$CARDS" --skip; return; fi
    "${LSR[@]}" benchmark "$RELEASED" || true   # its failed rows are misses, named by the check
    "${LSR[@]}" check-published "$RELEASED" --expect "$CARDS" || exit 1
}
data() { "${LSR[@]}" teacher-scores --out "$TEACHER" --expect pipelines/data/msmarco-teacher-scores.json; }
NAVER_MIDDLE_URL="https://www.dropbox.com/s/hir60b9yj194dv7/mlm_flops.tar.gz?dl=1"
NAVER_MIDDLE_LOCK=pipelines/data/naver-mlm-flops.json
# naver's checkpoints by default (the paper's models started from them); ours is one setting away
MIDDLE_FROM=${MIDDLE_FROM:-naver}
case "$MIDDLE_FROM" in
    naver|ours) ;;
    *) echo "MIDDLE_FROM=$MIDDLE_FROM: expected naver (the default) or ours" >&2; exit 2 ;;
esac
GRID_ARGS=(--set "model.middle_from=$MIDDLE_FROM")   # each trained run records (and its rows show) its start

naver_middle() {  # naver's DistilBERT and BERTiny from their tarball, as work/train/middle-*-msmarco/model
    local tarball=work/downloads/mlm_flops.tar.gz
    mkdir -p work/downloads
    if [ ! -s "$tarball" ]; then
        curl -fL -o "$tarball.partial" "$NAVER_MIDDLE_URL" && mv "$tarball.partial" "$tarball"
    fi
    "${LSR[@]}" check-archive "$tarball" --expect "$NAVER_MIDDLE_LOCK" --need DistilBERT --need BERTiny
    rm -rf work/downloads/naver-mlm-flops && mkdir -p work/downloads/naver-mlm-flops
    tar -xzf "$tarball" -C work/downloads/naver-mlm-flops
    for pair in DistilBERT:middle-distilbert-msmarco BERTiny:middle-bert-tiny-msmarco; do
        src=$(find work/downloads/naver-mlm-flops -type d -name "${pair%%:*}" | head -n 1)
        [ -n "$src" ] || { echo "mlm_flops.tar.gz holds no ${pair%%:*} folder" >&2; exit 1; }
        mkdir -p "work/train/${pair#*:}" && rm -rf "work/train/${pair#*:}/model" && cp -r "$src" "work/train/${pair#*:}/model"
    done
}
middle() {
    if [ "$MIDDLE_FROM" = naver ]; then naver_middle; return; fi
    for config in "${MIDDLE[@]}"; do "${LSR[@]}" middle-train "$config" --resume; done
}

. pipelines/grid_stages.sh

case "$STAGE" in
    check) first_check ;;
    estimate) grid_estimate ;;
    data) data ;;
    middle) middle ;;
    train) grid_train ;;
    evaluate) "${LSR[@]}" benchmark "$BENCH" ;;
    report) "${LSR[@]}" report results --out results/report ;;
    all) first_check; data; middle; grid_train; "${LSR[@]}" benchmark "$BENCH"
         "${LSR[@]}" report results --out results/report ;;
    *) echo "usage: $0 [check|estimate|data|middle|train|evaluate|report|all] [--skip-check]" >&2; exit 2 ;;
esac
