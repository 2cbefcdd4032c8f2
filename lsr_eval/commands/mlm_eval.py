"""``lsr-eval mlm-eval CONFIG MODEL...``: masked-token accuracy and perplexity on a middle-training config's
held-out texts (docs/training.md)."""

from __future__ import annotations

import argparse

from lsr_eval.commands.options import add_device
from lsr_eval.errors import ConfigError
from lsr_eval.models.options import HEAD_INIT_RULES

NAME = "mlm-eval"
HELP = "masked-token top-1 accuracy and perplexity of masked LMs on a middle-training config's held-out texts"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", metavar="CONFIG", help="middle-training YAML whose data.holdout texts are scored")
    p.add_argument("models", metavar="MODEL", nargs="+",
                   help="LABEL=PATH or PATH: model folder, hub id or offline alias (minilm, splade-tiny)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value (as lsr-eval middle-train)")
    p.add_argument("--head-init", choices=HEAD_INIT_RULES, default="auto",
                   help="head initialisation of checkpoints without an MLM head (%(default)s: identity)")
    p.add_argument("--seed", type=int, default=0, help="masking seed (%(default)s)")
    p.add_argument("--batch-size", type=int, default=32)
    add_device(p, default="cpu", why="models run in float32")
    p.add_argument("--out", metavar="DIR", help="write metrics.json and manifest.json to DIR")


def parse_models(items: list[str]) -> dict[str, str]:
    """``LABEL=PATH`` or ``PATH`` (its own label) -> {label: path}; a repeated label is an error."""
    out: dict[str, str] = {}
    for item in items:
        label, sep, path = item.partition("=")
        if not sep:
            label, path = item, item
        if not label or not path:
            raise ConfigError(f"model {item!r}: expected LABEL=PATH or PATH")
        if label in out:
            raise ConfigError(f"model label {label!r} given twice")
        out[label] = path
    return out


def run(args: argparse.Namespace) -> int:
    """Parse the options into :func:`lsr_eval.train.mlm_eval.evaluate_models`'s arguments; print each model's
    score as it comes."""
    from lsr_eval.train.mlm_eval import evaluate_models

    def said(label: str, r: dict, heldout: int) -> None:
        print(f"{label}: accuracy {r['accuracy']:.4f}, perplexity {r['perplexity']:.2f} ({r['n']} masked tokens "
              f"of {heldout} held-out texts; head {r['head_init']['applied']})")

    evaluate_models(args.config, parse_models(args.models), overrides=args.overrides, head_init=args.head_init,
                    seed=args.seed, batch_size=args.batch_size, device=args.device, out=args.out, progress=said)
    return 0
