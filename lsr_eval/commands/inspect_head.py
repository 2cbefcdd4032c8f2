"""``lsr-eval inspect-head MODEL``: MLM-head norms, initial SPLADE activations per rescaling k, suggested k."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lsr_eval.errors import InputError
from lsr_eval.models.offline import resolve_model
from lsr_eval.models.options import HEAD_INIT_RULES

NAME = "inspect-head"
HELP = "MLM-head norms and initial SPLADE activation statistics per rescaling factor k, with a suggested k"

# Mirror lsr_eval.models.diagnostics (which imports torch);
# tests/integration/test_models_diagnostics.py checks they agree.
DEFAULT_KS = [1, 2, 4, 8, 16]
DEFAULT_MAX_LENGTH = 256


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="model folder or hub id (loaded as AutoModelForMaskedLM)")
    parser.add_argument("--k", type=float, nargs="+", default=DEFAULT_KS, metavar="K",
                        help="rescaling factors to evaluate (default: %(default)s)")
    parser.add_argument("--text-file", type=Path,
                        help="sample texts, one per line (blank lines skipped); default: built-in sentences")
    parser.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH, help="tokens per text (%(default)s)")
    parser.add_argument("--head-init", choices=HEAD_INIT_RULES, default="auto",
                        help="head initialisation when the checkpoint has no MLM head (%(default)s)")
    parser.add_argument("--scale-bias", action="store_true", help="divide the logits bias by k too")
    parser.add_argument("--tied-input", choices=("divided", "compensated"), default="divided",
                        help="tied heads: divide the input embeddings with the head, or multiply their lookup back "
                             "by k (%(default)s)")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="run model code shipped with the checkpoint (e.g. Alibaba-NLP/gte-en-mlm-base)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="also write DIR/diagnosis.txt, DIR/diagnosis.json and DIR/manifest.json")


def read_texts(path: Path) -> list[str]:
    """Non-blank lines of ``path``; an error naming the file when it is missing or has none."""
    try:
        with open(path, encoding="utf-8") as f:
            texts = [line.strip() for line in f if line.strip()]
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    if not texts:
        raise InputError(f"{path}: no non-blank line")
    return texts


def run(args: argparse.Namespace) -> int:
    from lsr_eval.models.diagnostics import format_diagnosis, inspect_head, save_diagnosis

    texts = read_texts(args.text_file) if args.text_file else None

    d = inspect_head(resolve_model(args.model), args.k, texts, head_init=args.head_init, max_length=args.max_length,
                     scale_bias=args.scale_bias, tied_input=args.tied_input,
                     trust_remote_code=args.trust_remote_code)
    text = format_diagnosis(d)
    print(json.dumps(d.to_dict(), indent=2) if args.json else text)
    if args.out:
        save_diagnosis(d, args.out, {"model": args.model, "k": list(args.k),
                                     "text_file": args.text_file and str(args.text_file), "max_length": args.max_length,
                                     "head_init": args.head_init, "scale_bias": args.scale_bias,
                                     "tied_input": args.tied_input})
    return 0
