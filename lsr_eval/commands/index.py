"""``lsr-eval index``: an index of a collection folder (impact on any engine, or an Anserini BM25 flat index)."""

from __future__ import annotations

import argparse

from lsr_eval.commands._common import stage_folder
from lsr_eval.commands._engine_args import add_engine_arguments, engine_options
from lsr_eval.engines.registry import get_engine, split_options
from lsr_eval.errors import ConfigError
from lsr_eval.manifest import prepare_output, write_manifest

NAME = "index"
HELP = ("index a JsonVectorCollection (--kind impact, with --engine anserini|pisa|seismic) or a JsonCollection "
        "(--kind bm25-flat, Anserini)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("collection", metavar="COLLECTION",
                   help="folder of JSON lines (an lsr-eval export folder: its docs/ sub-folder is used)")
    p.add_argument("--kind", choices=["impact", "bm25-flat"], default="impact")
    p.add_argument("--out", required=True, help="output folder (index/ and manifest.json)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--overwrite", action="store_true")
    add_engine_arguments(p)


def run(args: argparse.Namespace) -> int:
    from lsr_eval.export.documents import COLLECTION_DIR

    src = stage_folder(args.collection, COLLECTION_DIR)
    options = engine_options(args)
    if args.kind == "bm25-flat":
        if args.engine != "anserini" or options:
            raise ConfigError("--kind bm25-flat is an Anserini index: --engine anserini, no --engine-option")
        from lsr_eval.anserini.indexer import build_index
        from lsr_eval.anserini.jvm import info

        experiment = {"stage": "index", "kind": args.kind, "collection": str(src.resolve())}
        out = prepare_output(args.out, experiment, args.overwrite)
        counts = build_index(src, out / "index", args.kind, threads=args.threads)
        write_manifest(out, "index", experiment, counts=counts.to_dict(), java=info(), index=str(out / "index"))
        print(f"{counts.total_indexed} documents indexed ({counts.empty_appended} empty appended) into "
              f"{out / 'index'}")
        return 0

    build, search = split_options(args.engine, options)
    if search:
        raise ConfigError(f"{', '.join(search)}: search options of {args.engine}; give them to `lsr-eval search`")
    engine = get_engine(args.engine, **build)
    experiment = {"stage": "index", "kind": args.kind, "collection": str(src.resolve())}
    if args.engine != "anserini":
        experiment.update(engine=args.engine, engine_build=build)
    out = prepare_output(args.out, experiment, args.overwrite)
    counts = engine.build(src, out / "index", threads=args.threads)
    write_manifest(out, "index", experiment, counts=counts.to_dict(), engine=engine.describe(),
                   index=str(out / "index"))
    print(f"{counts.documents_indexed} of {counts.documents_read} documents indexed by {args.engine} into "
          f"{out / 'index'}")
    return 0
