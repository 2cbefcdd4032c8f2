"""Stage 3: encoded document vectors -> Anserini ``JsonVectorCollection`` (JSON lines, integer impacts).

One line per document, in input order: ``{"id": ..., "contents": "", "vector": {"token": impact, ...}}`` with
impacts quantised by :mod:`lsr_eval.export.quantize` (``scale`` recorded in the manifest). Documents whose vector is
empty (before or after quantisation) are kept (``"vector": {}``) and counted: note that Anserini's
``DefaultLuceneDocumentGenerator`` skips a document whose contents are empty, so the indexing stage must handle them.
Output file ``docs/docs-0000k.jsonl`` (``.jsonl.gz`` when ``compress``) holds encoded shard ``k``, so shards are
exported in parallel (``workers`` processes) and Anserini indexes the files in parallel (one thread per file).
The files lie in the ``docs/`` sub-folder because Anserini reads every file of its input folder, ``manifest.json``
included (a JSON object without ``vector``: a NullPointerException in JsonVectorCollection).
Index with ``-collection JsonVectorCollection -input OUT/docs -impact -pretokenized``.
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Mapping

from lsr_eval.encode import store
from lsr_eval.encode.reader import read_encoding_manifest, read_vocab
from lsr_eval.errors import ConfigError, InputError, OutputExistsError
from lsr_eval.export.jsonl import TMP_MARK, AtomicLines, json_dumper
from lsr_eval.export.prune import Prune
from lsr_eval.export.quantize import DEFAULT_SCALE, ROUNDING, VocabCheck, check_scale, quantize_rows
from lsr_eval.manifest import MANIFEST, prepare_output, write_manifest
from lsr_eval.settings import Setting, check

STAGE = "export"
#: sub-folder holding the collection files: Anserini's ``-input``.
COLLECTION_DIR = "docs"
#: documents turned into JSON at a time (bounds memory).
ROWS_PER_CHUNK = 10_000
DOC_FILE_RE = re.compile(r"^docs-\d{5,}\.jsonl(\.gz)?$")


#: Processes that quantise and write the collection's files.
WORKERS = Setting(help="processes writing the collection's files", ge=1, unit="processes")


def doc_file_name(k: int, compress: bool) -> str:
    return f"docs-{k:05d}.jsonl" + (".gz" if compress else "")


class _ShardExporter:
    """Quantise one encoded shard and write it as one JSON-lines file; returns its counts."""

    def __init__(self, vocab: list[str], scale: float, compress: bool, prune: Prune | None = None) -> None:
        self.vocab = VocabCheck(vocab)
        self.scale = scale
        self.compress = compress
        self.prune = prune if prune is not None and prune.active else None
        self.library, self.dumps = json_dumper()

    def __call__(self, shard_path: Path, out_path: Path) -> dict[str, int]:
        shard = store.read_shard(shard_path)
        if shard.weights.shape[1] != len(self.vocab.tokens):
            raise InputError(f"{shard_path} has {shard.weights.shape[1]} columns, the vocabulary "
                             f"{len(self.vocab.tokens)} tokens")
        weights = shard.weights if self.prune is None else self.prune.apply(shard.weights)
        q = quantize_rows(weights, shard.doc_ids, self.vocab, self.scale)
        ids, dumps, n = shard.doc_ids, self.dumps, len(shard.doc_ids)
        writer = AtomicLines(out_path, self.compress)
        try:
            for lo in range(0, n, ROWS_PER_CHUNK):
                hi = min(lo + ROWS_PER_CHUNK, n)
                a, b = int(q.indptr[lo]), int(q.indptr[hi])
                toks = self.vocab.tokens[q.indices[a:b]].tolist()
                vals = q.values[a:b].tolist()
                ptr = (q.indptr[lo:hi + 1] - a).tolist()
                writer.write_lines([dumps({"id": ids[lo + i], "contents": "",
                                           "vector": dict(zip(toks[ptr[i]:ptr[i + 1]], vals[ptr[i]:ptr[i + 1]]))})
                                    for i in range(hi - lo)])
            writer.close()
        except BaseException:
            writer.abort()
            raise
        return {"documents_in": n, "documents_out": writer.lines, "empty_vectors": q.empty_after,
                "empty_before_quantization": q.empty_before, "dropped_zero_weights": q.dropped_zero_weights,
                "total_postings": len(q.values), "pruned_weights": shard.weights.nnz - weights.nnz}


_worker: _ShardExporter | None = None


def _init_worker(exporter: _ShardExporter) -> None:
    global _worker
    _worker = exporter


def _run_worker(shard_path: Path, out_path: Path) -> dict[str, int]:
    if _worker is None:
        raise RuntimeError("export worker used before _init_worker")
    return _worker(shard_path, out_path)


def export_documents(vectors_folder: str | os.PathLike, out_folder: str | os.PathLike,
                     experiment: Mapping[str, Any], *, scale: float = DEFAULT_SCALE, compress: bool = False,
                     workers: int = 1, overwrite: bool = False, progress: bool = True,
                     prune: Prune | None = None) -> dict[str, Any]:
    """Write the JsonVectorCollection of the finalised encoding in ``vectors_folder``; returns the manifest
    sections. ``prune`` (:mod:`lsr_eval.export.prune`) drops weights of the stored vectors before quantisation
    (a sparsity sweep over one encoding); the manifest records it and counts the weights it dropped. Refuses non-finite
    or negative weights (naming the document) and tokens with whitespace (naming token and vocabulary id); on any error
    no ``docs-*`` file is left."""
    scale = check_scale(scale)
    check("workers", workers, int, WORKERS)
    src = Path(vectors_folder)
    source = read_encoding_manifest(src)
    out = Path(out_folder)
    if out.resolve() == src.resolve():
        raise ConfigError(f"export into the vectors folder {src} is refused: choose another output folder")
    prepare_output(out, experiment, overwrite)
    coll = _clear_collection(out)

    shards = source["outputs"]["shards"]
    for name in shards:
        if not (src / name).exists():
            raise InputError(f"{src / name} is missing (listed in {src / MANIFEST})")
    files = [doc_file_name(k, compress) for k in range(len(shards))]
    tasks = [(src / s, coll / f) for s, f in zip(shards, files)]
    exporter = _ShardExporter(read_vocab(src), scale, compress, prune)
    totals, seconds = _export_shards(tasks, exporter, workers=workers, documents=source["counts"]["documents_out"],
                                     progress=progress, on_error=lambda: _remove_partial(out, coll, files))
    sections = _manifest_sections(src, source, totals, seconds, files, exporter, scale=scale, compress=compress,
                                  workers=workers)
    write_manifest(out, STAGE, experiment, **sections)
    return sections


def _clear_collection(out: Path) -> Path:
    """The collection folder in ``out``, made, with an earlier export's files of the same experiment removed;
    refuses any other file there, since Anserini would index it."""
    coll = out / COLLECTION_DIR
    coll.mkdir(exist_ok=True)
    for f in coll.iterdir():  # files of an earlier export of the same experiment
        if f.is_file() and (DOC_FILE_RE.match(f.name) or TMP_MARK in f.name):
            f.unlink()
    others = sorted(f.name for f in coll.iterdir())
    if others:
        raise OutputExistsError(f"{coll} holds other files ({', '.join(others[:3])}) that Anserini would index; "
                                "remove them or choose another folder")
    return coll


def _export_shards(tasks: list[tuple[Path, Path]], exporter: _ShardExporter, *, workers: int, documents: int,
                   progress: bool, on_error: Callable[[], None]) -> tuple[dict[str, int], float]:
    """Run ``exporter`` on every (shard, file) task, in ``workers`` processes when more than one, with a progress
    bar over ``documents``; (the summed counts, seconds). On any error ``on_error`` runs before it is raised."""
    from tqdm import tqdm

    totals: dict[str, int] = {}
    start = time.perf_counter()
    pool: ProcessPoolExecutor | None = None
    bar = tqdm(total=documents, unit="doc", desc="export", disable=not progress)
    try:
        if workers == 1:
            results = (exporter(*t) for t in tasks)
        else:
            # spawn, not fork: forking a process that runs torch threads can deadlock
            pool = ProcessPoolExecutor(min(workers, max(1, len(tasks))), mp_context=get_context("spawn"),
                                       initializer=_init_worker, initargs=(exporter,))
            results = pool.map(_run_worker, *zip(*tasks)) if tasks else iter(())
        for counts in results:
            for key, value in counts.items():
                totals[key] = totals.get(key, 0) + value
            bar.update(counts["documents_in"])
        if pool is not None:
            pool.shutdown()
    except BaseException:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        on_error()
        raise
    finally:
        bar.close()
    return totals, time.perf_counter() - start


def _remove_partial(out: Path, coll: Path, files: list[str]) -> None:
    """Undo a failed export: its collection files (and the folder when left empty) and the manifest go."""
    for name in files:  # no partial collection is left for Anserini to index
        (coll / name).unlink(missing_ok=True)
    if not any(coll.iterdir()):
        coll.rmdir()
    (out / MANIFEST).unlink(missing_ok=True)  # an earlier export's manifest no longer describes the folder


def _manifest_sections(src: Path, source: Mapping[str, Any], totals: Mapping[str, int], seconds: float,
                       files: list[str], exporter: _ShardExporter, *, scale: float, compress: bool,
                       workers: int) -> dict[str, Any]:
    """The export's manifest sections, once the documents read and written are checked against the source's."""
    n_in, n_out = totals.get("documents_in", 0), totals.get("documents_out", 0)
    if not n_in == n_out == source["counts"]["documents_out"]:
        raise InputError(f"{src}: {n_in} documents read, {source['counts']['documents_out']} in its manifest, "
                         f"{n_out} written")
    postings = totals.get("total_postings", 0)
    sections: dict[str, Any] = {
        "counts": {"documents_in": n_in, "documents_out": n_out, "empty_vectors": totals.get("empty_vectors", 0),
                   "empty_before_quantization": totals.get("empty_before_quantization", 0),
                   "dropped_zero_weights": totals.get("dropped_zero_weights", 0), "total_postings": postings},
        "vectors": {"avg_active_dims": postings / n_out if n_out else 0.0},
        "parameters": {"scale": scale, "rounding": ROUNDING, "drop": "impacts that round to 0", "compress": compress,
                       "workers": workers, "json_library": exporter.library},
        "throughput": {"seconds": seconds, "docs_per_s": n_out / seconds if seconds else None},
        "source": {"folder": str(src), "stage": source.get("stage"), "experiment": source.get("experiment")},
        "anserini": {"collection": "JsonVectorCollection", "input": COLLECTION_DIR,
                     "index_flags": ["-impact", "-pretokenized"],
                     "empty_documents": "vector {} -> empty contents: DefaultLuceneDocumentGenerator skips them"},
        "outputs": {"collection_dir": COLLECTION_DIR, "files": files},
    }
    if exporter.prune is not None:
        sections["parameters"]["prune"] = exporter.prune.to_dict()
        sections["counts"]["pruned_weights"] = totals.get("pruned_weights", 0)
    return sections
