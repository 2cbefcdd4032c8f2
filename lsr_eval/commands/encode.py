"""``lsr-eval encode``: a corpus into sharded sparse vectors (resumable; under torchrun, one share of the shards
per process, rank 0 checks and writes the manifest once all ranks are done)."""

from __future__ import annotations

import argparse

from lsr_eval.commands._model_args import add_model_arguments, settings_from_args
from lsr_eval.commands.options import add_setting
from lsr_eval.data.datasets import load_dataset
from lsr_eval.pipeline.settings import EncodeOptions

NAME = "encode"
HELP = "encode a corpus with a SPLADE model into sharded sparse vectors (torchrun-shardable, resumable)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_arguments(p)
    p.add_argument("dataset", metavar="DATASET", help="registry name, irds:<id>, or a BEIR folder")
    p.add_argument("--split", help="split of a BEIR folder")
    p.add_argument("--out", required=True, help="output folder of the shards")
    add_setting(p, EncodeOptions, "shard_size")
    p.add_argument("--overwrite", action="store_true")


def run(args: argparse.Namespace) -> int:
    """Parse the options into :func:`lsr_eval.api.files.encode_folder`'s arguments, and print what it encoded."""
    from lsr_eval.api.files import encode_folder

    settings = settings_from_args(args, shard_size=args.shard_size)
    done = encode_folder(settings, load_dataset(args.dataset, args.split), args.out, overwrite=args.overwrite)
    if done.world == 1:
        print(f"{done.documents} documents encoded into {done.folder} ({done.docs_per_s:.1f} docs/s)")
    elif done.documents is not None:   # rank 0, once every rank is done
        print(f"{done.documents} documents encoded into {done.folder}")
    return 0
