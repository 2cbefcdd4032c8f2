"""``lsr-eval mlm-eval CONFIG MODEL...``: masked-token accuracy and perplexity on a middle-training config's
held-out texts (docs/training.md)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from lsr_eval.commands.options import add_device
from lsr_eval.errors import ConfigError
from lsr_eval.manifest import write_manifest
from lsr_eval.models.offline import resolve_model
from lsr_eval.models.options import HEAD_INIT_RULES
from lsr_eval.train.config import MiddleTrainConfig, load_config

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

    from lsr_eval.models.device import resolve_device
    from lsr_eval.models.loading import load_mlm
    from lsr_eval.train.mlm_eval import evaluate_masked_lm
    from lsr_eval.train.mlm_text import collect_texts
    from lsr_eval.train.recipe import head_norm

    cfg = load_config(args.config, args.overrides, MiddleTrainConfig)
    models = parse_models(args.models)
    texts = collect_texts(cfg.data)
    if not texts.heldout:
        raise ConfigError(f"{args.config}: data.holdout={cfg.data.holdout} holds out no text to evaluate on")
    device = resolve_device(args.device)
    settings = {"mask_prob": cfg.mlm.mask_prob, "max_length": cfg.model.max_length, "seed": args.seed,
                "batch_size": args.batch_size, "precision": "fp32", "device": str(device)}
    results = {}
    for label, path in models.items():
        mlm, tokenizer, report = load_mlm(resolve_model(path), head_init=args.head_init,
                                          trust_remote_code=cfg.model.trust_remote_code)
        mlm.to(device)
        t0 = time.perf_counter()
        score = evaluate_masked_lm(mlm, tokenizer, texts.heldout, mask_prob=cfg.mlm.mask_prob,
                                   max_length=cfg.model.max_length, seed=args.seed, batch_size=args.batch_size)
        results[label] = {"model": path, **score.to_dict(), "head_init": report.to_dict(),
                          "head_norm": head_norm(mlm), "seconds": round(time.perf_counter() - t0, 2)}
        print(f"{label}: accuracy {score.accuracy:.4f}, perplexity {score.perplexity:.2f} "
              f"({score.n} masked tokens of {len(texts.heldout)} held-out texts; head {report.applied})")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "metrics.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        write_manifest(out, "mlm-eval", {"config": str(args.config), "data": cfg.data.__dict__,
                                         "heldout_sha256": texts.counts["heldout_sha256"],
                                         "models": models, **settings},
                       counts=texts.counts, metrics=results)
    return 0
