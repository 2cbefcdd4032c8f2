"""``lsr-eval encode``: a corpus into sharded sparse vectors (resumable; under torchrun, one share of the shards
per process, rank 0 checks and writes the manifest once all ranks are done)."""

from __future__ import annotations

import argparse

from lsr_eval.commands._model_args import add_model_arguments, settings_from_args
from lsr_eval.data.datasets import load_dataset
from lsr_eval.pipeline.splade import encoder_fingerprint, load_model

NAME = "encode"
HELP = "encode a corpus with a SPLADE model into sharded sparse vectors (torchrun-shardable, resumable)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_arguments(p)
    p.add_argument("dataset", metavar="DATASET", help="registry name, irds:<id>, or a BEIR folder")
    p.add_argument("--split", help="split of a BEIR folder")
    p.add_argument("--out", required=True, help="output folder of the shards")
    p.add_argument("--shard-size", type=int, default=50_000)
    p.add_argument("--overwrite", action="store_true")


def run(args: argparse.Namespace) -> int:
    from lsr_eval.encode.corpus import encode_corpus, resolve_rank
    from lsr_eval.encode.finalize import finalize_encoding
    from lsr_eval.encode.progress import expected_documents
    from lsr_eval.encode.splade import SpladeTextEncoder

    settings = settings_from_args(args, shard_size=args.shard_size)
    dataset = load_dataset(args.dataset, args.split)
    model = load_model(settings)
    rank, world = resolve_rank(None, None)
    info = encoder_fingerprint(settings, model.document)  # the run record below says why this precision
    experiment = {"stage": "encode", "encoder": info, "corpus": dataset.corpus_key()}
    summary = encode_corpus(dataset.docs(), SpladeTextEncoder(model.document), args.out, experiment,
                            encoder_info=info, shard_size=args.shard_size, batch_size=settings.encode.batch_size,
                            overwrite=args.overwrite, total=expected_documents(dataset),
                            run_info=model.document.runtime())
    if world > 1:
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("gloo")
        dist.barrier()
        if rank == 0:
            summary_manifest = finalize_encoding(args.out)
            print(f"{summary_manifest['counts']['documents_out']} documents encoded into {args.out}")
        dist.destroy_process_group()
    else:
        print(f"{summary.manifest['counts']['documents_out']} documents encoded into {args.out} "
              f"({summary.manifest['throughput']['docs_per_s']:.1f} docs/s)")
    return 0
