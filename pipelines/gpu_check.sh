#!/usr/bin/env bash
# GPU check: splade-tiny encodes 2,000 SciFact documents on CUDA in fp32 and in bf16; both are compared
# with the CPU's fp32 vectors (identical integer impacts at scale 100, largest weight difference, top-10 term overlap)
# and docs/s are written with the agreement to results/gpu-check/ (gpu_check.json, summary.md, manifest.json).
# Under 5 minutes on one GPU (studies/gpu_check/run.py does the work). Refuses when torch sees no CUDA device.
#
#   bash pipelines/gpu_check.sh
#   OUT=work/gpu-check DEVICE=cuda:1 DOCS=2000 DATA=/path/to/beir/scifact bash pipelines/gpu_check.sh
#
# A manifest under results/ is written only from a clean checkout (commit first, or set OUT outside results/).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
OUT=${OUT:-results/gpu-check}
DEVICE=${DEVICE:-cuda}
DOCS=${DOCS:-2000}
DATA=${DATA:-}
if [ -z "$DATA" ]; then   # the shared data beside the checkout, else a shared/ folder inside it
  for d in ../shared/data/beir/scifact shared/data/beir/scifact; do
    if [ -f "$d/corpus.jsonl" ]; then DATA=$d; break; fi
  done
fi
if [ -z "$DATA" ] || [ ! -f "$DATA/corpus.jsonl" ]; then
  echo "gpu_check: no SciFact corpus (looked for ../shared/data/beir/scifact/corpus.jsonl and shared/...): set DATA" >&2
  exit 2
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1   # this checkout's lsr_eval

"$PYTHON" - "$DEVICE" <<'PY' || exit 3
import sys

import torch

device = sys.argv[1]
if not torch.cuda.is_available():
    build = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    sys.exit(f"gpu_check: no GPU: torch {torch.__version__} ({build}) sees no CUDA device. This check needs a GPU "
             "and a CUDA build of torch (docs/guide.md, Precision and device); nothing was written.")
index = int(device.split(":")[1]) if ":" in device else 0
if index >= torch.cuda.device_count():
    sys.exit(f"gpu_check: {device} does not exist ({torch.cuda.device_count()} CUDA device(s)); nothing was written.")
print(f"gpu_check: {torch.cuda.get_device_name(index)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
PY

exec "$PYTHON" studies/gpu_check/run.py --device "$DEVICE" --docs "$DOCS" --data "$DATA" --out "$OUT"
