#!/usr/bin/env bash
# The rescaling paper (Jang et al., "Rescaling MLM-Head for Neural Sparse Retrieval"): train its grid, evaluate every
# trained model, write the report. On a GPU machine or cluster with a network:
#
#   pipelines/paper_rescaling.sh estimate    # GPU-hours of the grid (needs a measured step time: see the README)
#   pipelines/paper_rescaling.sh train       # the 35 configs, run after run here (NPROC GPUs each, default 1)
#   LAUNCHER=slurm GPUS=4 TIME=48:00:00 PARTITION=gpu pipelines/paper_rescaling.sh train
#                                            # ... or one SLURM array task per pending config (waits for the array)
#   pipelines/paper_rescaling.sh evaluate    # pipelines/benchmarks/paper-rescaling.yaml (MS MARCO dev, DL19, BEIR-13)
#   pipelines/paper_rescaling.sh report      # lsr-eval report results --out results/report
#   pipelines/paper_rescaling.sh all         # train, evaluate, report
#
# A finished run is skipped and a killed one resumes (lsr-eval grid). LSR_EVAL overrides the command
# (e.g. LSR_EVAL="python -m lsr_eval.cli"); STEP_TIME=SECONDS gives the estimate a step time.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a LSR <<< "${LSR_EVAL:-lsr-eval}"
CONFIGS=()
for backbone in albert-base-v2 bert-base-uncased distilbert-base-uncased ettin-encoder-150m gte-en-mlm-base \
                modernbert-base roberta-base; do
    for k in 1 2 4 8 16; do CONFIGS+=("pipelines/train/rescale-$backbone-k$k.yaml"); done
done

. pipelines/grid_stages.sh

case "${1:-all}" in
    estimate) grid_estimate ;;
    train) grid_train ;;
    evaluate) "${LSR[@]}" benchmark pipelines/benchmarks/paper-rescaling.yaml ;;
    report) "${LSR[@]}" report results --out results/report ;;
    all) grid_train; "${LSR[@]}" benchmark pipelines/benchmarks/paper-rescaling.yaml; \
         "${LSR[@]}" report results --out results/report ;;
    *) echo "usage: $0 estimate|train|evaluate|report|all" >&2; exit 2 ;;
esac
