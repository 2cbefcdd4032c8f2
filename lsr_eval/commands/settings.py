"""``lsr-eval settings``: every declared setting, its type and constraint, default, unit and help (the tables of
``docs/settings.md``), read from the declarations (:mod:`lsr_eval.settings`)."""

from __future__ import annotations

import argparse

NAME = "settings"
HELP = "list every setting: its type and constraint, default, unit and help (--markdown: docs/settings.md)"

TITLE = "Settings"
INTRO = ("Every setting of lsr-eval, declared once in the code with its type and constraint; this page is "
         "`lsr-eval settings --markdown` (a test keeps it current). A wrong value gets one line, whatever the door "
         "(a YAML file, an option, a keyword, a manifest replayed): `<file or option>: <name> must be <constraint>, "
         "got <value>`. A benchmark YAML and a manifest name the SPLADE settings flat (`doc_top_k: 1024`); the "
         "command line spells them as options (`--doc-top-k 1024`); Python takes them by stage "
         "(`Splade(model, encode=EncodeOptions(doc_top_k=1024))`).")


def sections() -> list[tuple[str, str, type]]:
    """(heading, where the settings are given, the dataclass that declares them), in the data flow's order."""
    from lsr_eval.benchmark.config import CrossValidation, EfficiencyEntry, SignificanceEntry
    from lsr_eval.models.options import IdentityHead
    from lsr_eval.pipeline.settings import Bm25Settings, EncodeOptions, ExportOptions, LoadOptions, SearchOptions
    from lsr_eval.train import config as t

    splade = "A benchmark YAML's `kind: splade` system, `lsr-eval splade`'s options, and Python's "
    return [
        ("SPLADE: loading", splade + "`LoadOptions`.", LoadOptions),
        ("SPLADE: encoding", splade + "`EncodeOptions`.", EncodeOptions),
        ("SPLADE: export", splade + "`ExportOptions`.", ExportOptions),
        ("SPLADE: index and search", splade + "`SearchOptions`.", SearchOptions),
        ("BM25", "A benchmark YAML's `kind: bm25` system, `lsr-eval bm25`'s options, `lsr_eval.bm25(...)`.",
         Bm25Settings),
        ("Identity head", "`lsr_eval.models.options.IdentityHead` (`lsr-eval inspect-head`).", IdentityHead),
        ("Benchmark: efficiency", "A benchmark YAML's `efficiency:` section.", EfficiencyEntry),
        ("Benchmark: significance", "A benchmark YAML's `significance:` section.", SignificanceEntry),
        ("Benchmark: fusion cross-validation", "A fusion entry's `tune: {cv: K, seed: S}`.", CrossValidation),
        ("Training: model", "A training YAML's `model:` section (`lsr-eval train`).", t.ModelConfig),
        ("Training: query encoder", "`model.query:`, a query encoder of its own.", t.QueryEncoderConfig),
        ("Training: built query encoder", "`model.query.build:`, a BERT built from scratch.", t.BuildConfig),
        ("Training: data", "`data:`.", t.DataConfig),
        ("Training: loss", "`loss:`.", t.LossConfig),
        ("Training: regularisers", "`regularizer:`.", t.RegularizerConfig),
        ("Training: optimiser", "`optim:` (training and middle training).", t.OptimConfig),
        ("Training: loop", "`train:` (training and middle training).", t.TrainConfig),
        ("Middle training: model", "A middle-training YAML's `model:` (`lsr-eval middle-train`).",
         t.MiddleModelConfig),
        ("Middle training: data", "`data:`.", t.MiddleDataConfig),
        ("Middle training: masking", "`mlm:`.", t.MlmConfig),
    ]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", action="store_true", help="print docs/settings.md (Markdown tables)")


def run(args: argparse.Namespace) -> int:
    from lsr_eval.settings.docs import markdown, table

    if args.markdown:
        print(markdown(sections(), TITLE, INTRO), end="")
        return 0
    for heading, where, cls in sections():
        print(f"{heading}\n  {where}\n{table(cls)}\n")
    return 0
