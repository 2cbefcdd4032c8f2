"""``lsr-eval splade``: encode -> export -> index -> search -> evaluate, for a model and a dataset."""

from __future__ import annotations

import argparse

from lsr_eval.commands._common import add_dataset_arguments, add_output_arguments, print_metrics
from lsr_eval.commands._engine_args import add_engine_arguments, engine_options
from lsr_eval.commands._model_args import add_model_arguments, settings_from_args
from lsr_eval.commands.options import add_setting
from lsr_eval.data.datasets import load_dataset
from lsr_eval.pipeline.reuse import RUN_FILE
from lsr_eval.pipeline.settings import EncodeOptions, SearchOptions

NAME = "splade"
HELP = "SPLADE end to end: encode, export, impact-index (each cached), search, evaluate"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_arguments(p)
    add_dataset_arguments(p)
    add_output_arguments(p)
    add_engine_arguments(p)
    add_setting(p, SearchOptions, "hits")
    add_setting(p, EncodeOptions, "shard_size")
    p.add_argument("--remove-query", dest="remove_query", action="store_true", default=None,
                   help="drop hits whose docid equals the query id (default: on for BEIR)")
    p.add_argument("--keep-query", dest="remove_query", action="store_false")
    p.add_argument("--run-file", default=RUN_FILE,
                   help=f"name of the run in --out (default {RUN_FILE}; .gz or .xz: compressed, xz about half gzip)")
    p.add_argument("--no-eval", dest="evaluate", action="store_false",
                   help="write the run and compute no metric: no relevance grade is used (the qrels only name the "
                        "split's queries); a test split searched now, evaluated later from the run file")


def run(args: argparse.Namespace) -> int:
    """Parse the options into :class:`lsr_eval.api.vectors.Splade`'s typed settings, run it, print the metrics."""
    from lsr_eval.api.vectors import Splade

    dataset = load_dataset(args.dataset, args.split, args.topics, args.qrels)
    search = SearchOptions(engine=args.engine, engine_options=engine_options(args), hits=args.hits,
                           max_clauses=args.max_clauses, remove_query=args.remove_query)
    splade = Splade.of(settings_from_args(args, search, shard_size=args.shard_size), work=args.work_dir)
    result = splade.run(dataset, args.out, threads=args.threads, overwrite=args.overwrite, evaluate=args.evaluate,
                        run_file=args.run_file)
    if args.evaluate:
        print_metrics(f"splade {dataset.name}", result.metrics)
    else:
        print(f"splade {dataset.name}: {len(result.run)} queries searched into {result.folder / args.run_file}; "
              "not evaluated (--no-eval)")
    return 0
