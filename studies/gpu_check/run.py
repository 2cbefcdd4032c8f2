"""GPU check: the same documents encoded on a GPU in fp32 and in bf16, against the CPU's fp32 vectors.

    python studies/gpu_check/run.py --out results/gpu-check          # what pipelines/gpu_check.sh runs
    python studies/gpu_check/run.py --device cpu --docs 20 --out DIR   # the comparison itself, on a machine without GPU

The first ``--docs`` SciFact documents (``title + " " + text``, ``--max-length`` tokens) are encoded by the document
encoder of ``--model`` the way ``lsr-eval encode`` does (:func:`lsr_eval.encode.batching.encode_window`, batches of
``--batch-size``, length-sorted): first on ``--reference-device`` (the CPU) in fp32, the reference; then on
``--device`` in each of ``--precisions`` (fp32 and bf16, one model on the device, the same weights: a warm-up batch
first, not timed). Each is compared with the reference (:func:`studies.harness.agreement.vector_agreement`:
identical integer impacts at scale 100, largest weight difference, top-10 term overlap), and bf16 with fp32 on the
device.

fp32 on the device must agree with the CPU within :data:`FP32_TOLERANCE` (largest absolute weight difference): the
device is not part of an encoding's cache identity (lsr_eval/models/device.py) only while that holds; the script
exits with status 1 when it does not. bf16's difference is reported, not judged (it is the opt-in for speed).

Outputs in ``--out``: ``gpu_check.json`` (docs/s of each encoding, the agreements, torch's float32 matmul settings,
the machine with its GPUs), ``summary.md`` and ``manifest.json``.
"""

from __future__ import annotations

import json
import sys
import sys as _sys
import time
from pathlib import Path
from pathlib import Path as _Path
from typing import Any

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from studies.gpu_check.measure import parse_args
from studies.gpu_check.summary import summary_md

STAGE = "gpu-check"
#: largest absolute weight difference allowed between fp32 on the device and fp32 on the CPU (summation order only;
#: splade-tiny's weights are below 5, float32 keeps ~7 digits)
FP32_TOLERANCE = 1e-4


def timed_encoding(encoder, docs: list[str], batch_size: int) -> tuple[Any, float]:
    """The documents' weights (CSR, in input order) and the seconds they took, after an untimed warm-up batch (the
    weights come back on the CPU, so the device's work is done when the clock stops)."""
    from lsr_eval.encode.batching import encode_window
    from lsr_eval.encode.splade import SpladeTextEncoder

    text_encoder = SpladeTextEncoder(encoder)
    encode_window(docs[:batch_size], text_encoder, batch_size)
    t0 = time.perf_counter()
    window = encode_window(docs, text_encoder, batch_size)
    return window.weights, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__.split("\n\n")[0])
    import torch

    from lsr_eval.manifest import machine, prepare_output, write_manifest
    from lsr_eval.models.device import resolve_device
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.splade import SpladeModel
    from studies.encode_speed.measure import read_docs
    from studies.harness.agreement import vector_agreement as agreement

    device, reference_device = resolve_device(args.device), resolve_device(args.reference_device)
    path = resolve_model(args.model)
    docs = read_docs(Path(args.data), args.docs)
    experiment = {"check": STAGE, "model": args.model, "docs": len(docs), "max_length": args.max_length,
                  "batch_size": args.batch_size, "device": args.device, "reference_device": args.reference_device,
                  "precisions": args.precisions}
    out = prepare_output(args.out, experiment, overwrite=True)

    def load(where):
        return SpladeModel.from_pretrained(path, max_length_d=args.max_length).document.to(where).eval()

    encodings: dict[str, dict[str, Any]] = {}
    weights = {}
    runs = [("reference", load(reference_device), "fp32")]
    on_device = load(device)
    runs += [(p, on_device, p) for p in args.precisions]
    for name, encoder, precision in runs:
        encoder = encoder.in_precision(precision)
        weights[name], seconds = timed_encoding(encoder, docs, args.batch_size)
        encodings[name] = {**encoder.runtime(), "seconds": seconds, "docs_per_s": len(docs) / seconds}
        print(f"{name}: {encodings[name]['device']} {encodings[name]['precision']['name']}, "
              f"{encodings[name]['docs_per_s']:.1f} docs/s", flush=True)
    agreements = {f"{p}_vs_reference": agreement(weights["reference"], weights[p]) for p in args.precisions}
    if "fp32" in args.precisions and "bf16" in args.precisions:
        agreements["bf16_vs_fp32"] = agreement(weights["fp32"], weights["bf16"])
    fp32 = agreements.get("fp32_vs_reference")
    result = {
        "model": args.model, "path": str(path), "docs": len(docs), "max_length": args.max_length,
        "batch_size": args.batch_size, "encodings": encodings, "agreement": agreements,
        "fp32_tolerance": FP32_TOLERANCE,
        "fp32_within_tolerance": None if fp32 is None else fp32["max_abs_weight_difference"] <= FP32_TOLERANCE,
        "torch": {"version": torch.__version__, "cuda": torch.version.cuda,
                  "float32_matmul_precision": torch.get_float32_matmul_precision(),
                  "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                  "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32},
        "machine": machine(),   # torch has run: the GPUs are described
    }
    text = summary_md(result)
    (out / "gpu_check.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(text, encoding="utf-8")
    write_manifest(out, STAGE, experiment, outputs=["gpu_check.json", "summary.md"],
                   figures={name: e["docs_per_s"] for name, e in encodings.items()},
                   fp32_within_tolerance=result["fp32_within_tolerance"])
    print(text, end="")
    return 1 if result["fp32_within_tolerance"] is False else 0


if __name__ == "__main__":
    sys.exit(main())
