"""Run a benchmark: every system on every dataset (each run reused when already done), fusion with weights tuned
on another split, significance against a baseline, efficiency; one table (CSV + JSON) with a manifest.

Design notes: docs/design.md."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
import shutil
import socket
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lsr_eval.benchmark.config import (
    DECLARED_COSTS,
    SWEEP_KEYS,
    BenchmarkConfig,
    CrossValidation,
    DatasetEntry,
    FusionEntry,
    SignificanceEntry,
    SystemEntry,
    check_on_disk,
)
from lsr_eval.benchmark.row import POOLED, Row
from lsr_eval.benchmark.status import RowStatus, Status, kind_of
from lsr_eval.data.datasets import Dataset, load_dataset
from lsr_eval.data.registry import GROUPS, expand
from lsr_eval.engines.registry import DEFAULT_ENGINE
from lsr_eval.errors import LsrEvalError
from lsr_eval.manifest import MANIFEST, check_copy, check_provenance, read_manifest, update_manifest, write_manifest
from lsr_eval.models.offline import OFFLINE_MODELS, resolve_model
from lsr_eval.models.options import check_device
from lsr_eval.pipeline.settings import STAGE_OF, SpladeSettings
from lsr_eval.pipeline.splade import doc_prune, load_model, open_searcher, run_splade

log = logging.getLogger(__name__)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", text).strip("_")


def expand_datasets(entries: tuple[DatasetEntry, ...]) -> list[DatasetEntry]:
    """Groups (``beir-13``) become their members."""
    out: list[DatasetEntry] = []
    for e in entries:
        if e.spec in GROUPS:
            out += [DatasetEntry(name, e.split, e.tune_split, None, e.measures) for name in expand(e.spec)]
        else:
            out.append(e)
    return out


def _label(e: DatasetEntry, dataset: Dataset) -> str:
    return e.label or _slug(dataset.name.replace("/", "-"))


def run_system(system: SystemEntry, dataset: Dataset, out: Path, work: Path, threads: int):
    """One system on one dataset (reused when already done): a :class:`~lsr_eval.pipeline.result.SystemResult`."""
    if system.kind == "run":
        from lsr_eval.pipeline.run_file import run_file

        return run_file(dataset, system.params["path"], out)
    if system.kind == "bm25":
        from lsr_eval.pipeline.bm25 import Bm25Settings, run_bm25

        return run_bm25(dataset, out, work, Bm25Settings(**system.params), threads=threads)

    return run_splade(dataset, out, work, _splade_settings(system), threads=threads)


def _hub_reachable() -> bool:
    """Whether the hub's host name resolves (one lookup): without it the hub client would retry for ~25 s."""
    from huggingface_hub import constants

    try:
        socket.getaddrinfo(urlparse(constants.ENDPOINT).hostname or "", 443)
    except OSError:
        return False
    return True


def _probe_model(name: str) -> str | None:
    """None when the hub id ``name`` can be had (its ``config.json``, from the hub or the local hub cache), else
    why not, in one line. Without a network only the local cache is asked (no retries)."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    online = _hub_reachable()
    try:
        hf_hub_download(name, "config.json", local_files_only=not online)
    except (OSError, ValueError, EntryNotFoundError) as e:  # offline, unknown or gated repository, malformed id
        if isinstance(e, EntryNotFoundError) and not isinstance(e, LocalEntryNotFoundError):
            return None   # the repository is there without a top-level config.json: its loader decides
        if isinstance(e, LocalEntryNotFoundError) or not online:
            return (f"not in the local hub cache, and the hub cannot be asked (no network, or HF_HUB_OFFLINE); a "
                    f"local folder can stand in: --map {name}=FOLDER")
        return " ".join(str(e).split())[:400]
    return None


def _unloadable(system: SystemEntry, probed: dict[str, str | None], dataset: str) -> str | None:
    """Why ``system`` cannot run: one of its hub models cannot be had. Each hub id is tried once per benchmark
    (``probed``: id -> None or why, with the dataset it was tried on), so that a model that cannot load costs one
    try and names itself on every row it would have filled."""
    if system.kind != "splade":
        return None

    for key in ("model", "query_model"):
        name = system.params.get(key)
        if not name or name in OFFLINE_MODELS or Path(name).exists():
            continue
        if name not in probed:
            why = _probe_model(name)
            probed[name] = None if why is None else f"{why} (tried once, on {dataset})"
            if why is not None:
                log.error("model %s cannot be loaded; every row of a system using it fails without another try: "
                          "%s", name, why)
        if probed[name] is not None:
            return f"model {name} cannot be loaded: {probed[name]}"
    return None


def _fuse(entry: FusionEntry, runs: dict[str, Any], tune_runs: dict[str, Any] | None, qrels, tune_qrels,
          measures, out: Path) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Fuse the runs (weights tuned on the tune split when asked); (metrics, fused run), files written to ``out``."""
    from lsr_eval.evaluation import evaluate, write_metrics
    from lsr_eval.evaluation.provenance import evaluation_code
    from lsr_eval.fusion.fuse import fuse
    from lsr_eval.fusion.tune import tune_weights
    from lsr_eval.runs.trec import write_run

    params = dict(entry.params)
    tuning = None
    inputs = [runs[r] for r in entry.runs]
    if isinstance(entry.tune, CrossValidation):
        from lsr_eval.fusion.cross_validation import cross_validate

        crossed = cross_validate(inputs, qrels, entry.method, entry.norm, entry.metric, k=entry.tune.cv,
                                 seed=entry.tune.seed, names=entry.runs)
        fused_run, tuning_record, counts = crossed.run, crossed.to_dict(), None
        settings = {"method": crossed.method, "norm": crossed.norm, "params": None, "depth": None,
                    "params_by_fold": "tuning.folds"}
    else:
        if entry.tune:
            if tune_runs is None:
                raise LsrEvalError(f"fusion {entry.name} asks to tune but the dataset has no tune_split")
            tuning = tune_weights([tune_runs[r] for r in entry.runs], tune_qrels, entry.method, entry.norm,
                                  entry.metric, reported=qrels)
            params = tuning.params
        fused = fuse(inputs, entry.method, entry.norm, params, names=entry.runs)
        fused_run, settings, counts = fused.run, fused.settings(), fused.counts.to_dict()
        tuning_record = tuning.to_dict() if tuning else None
    out.mkdir(parents=True, exist_ok=True)
    write_run(fused_run, out / "run.trec", tag=entry.name)
    metrics = evaluate(qrels, fused_run, measures)
    write_metrics(out, metrics)
    write_manifest(out, "fusion", {"fusion": asdict(entry), "inputs": list(entry.runs)},
                   settings=settings, counts=counts, tuning=tuning_record, metrics=metrics,
                   evaluation=evaluation_code())
    return metrics, fused_run


def _costs(system: SystemEntry, dataset: Dataset, run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """FLOPs, postings, active dimensions and index size of one system on one dataset: (row columns, the FLOPs
    record of its ``efficiency.json``)."""
    from lsr_eval.efficiency.postings import folder_bytes

    manifest = read_manifest(run_dir) or {}
    if system.kind == "bm25":
        from lsr_eval.anserini.collections import lucene_fields
        from lsr_eval.anserini.term_stats import TermStats
        from lsr_eval.efficiency.term_flops import term_flops

        index = manifest["index"]["path"]
        lucene = manifest["index"].get("lucene", index)   # BM25 on PISA: the Lucene index holds its statistics
        with TermStats(lucene, lucene_fields(system.params.get("fields"))) as stats:
            terms = [stats.analyze(q.text) for q in dataset.queries()]
            report = term_flops(terms, stats.doc_freqs(t for q in terms for t in q), stats.documents)
            documents, postings = stats.documents, stats.postings
        row = dict(flops=report.flops, postings=postings, postings_per_query=report.postings_per_query,
                   avg_q_dims=report.mean_query_terms, avg_d_dims=postings / documents, index_bytes=folder_bytes(index))
        return row, {**report.to_dict(), "documents": {"vectors": documents, "active_entries": postings,
                                                       "avg_active_dims": row["avg_d_dims"]},
                     "queries": {"vectors": report.queries, "empty_vectors": report.empty_queries,
                                 "avg_active_dims": report.mean_query_terms}}
    from lsr_eval.efficiency.flops import count_encoding, count_weight_maps, flops_report
    from lsr_eval.encode.reader import read_vocab
    from lsr_eval.export.queries import read_query_jsonl

    paths = manifest["paths"]
    prune = doc_prune(_splade_settings(system))
    docs = count_encoding(paths["encoding"], "impact", manifest["quantization"]["scale"],
                          prune=prune if prune.active else None)
    q = count_weight_maps(read_query_jsonl(run_dir / "queries" / "queries.jsonl"), read_vocab(paths["encoding"]))
    report = flops_report(docs, q)
    row = dict(flops=report.flops, postings=docs.total_active, postings_per_query=report.flops * docs.n,
               avg_d_dims=docs.mean_active, avg_q_dims=q.mean_active, index_bytes=folder_bytes(paths["index"]))
    return row, report.to_dict()


def _splade_settings(system: SystemEntry):
    params = {**system.params, "model": resolve_model(system.params["model"])}
    if params.get("query_model"):
        params["query_model"] = resolve_model(params["query_model"])
    return SpladeSettings.from_flat(**params)


#: Settings that ``load_model`` does not read (a sweep over them shares one loaded model): the search stage's,
#: the export's pruning and the shard size.
_NOT_MODEL = ("shard_size", "prune_doc_top_k", "prune_doc_threshold")


def _model_key(settings, dataset: Dataset | None = None) -> str:
    """Identity of the model ``load_model`` makes from these settings (an IDF query encoder: and the corpus)."""
    from lsr_eval.models.static_query import IDF

    key = {k: v for k, v in settings.flat().items() if k not in _NOT_MODEL and STAGE_OF.get(k) != "search"}
    if settings.load.query_model == IDF:
        key["idf_corpus"] = dataset.corpus_key() if dataset is not None else None
    return json.dumps(key, sort_keys=True, default=str)


def _model_for(settings, models: dict[str, Any], dataset: Dataset | None = None, work: Path | None = None):
    """The loaded model for these settings: the one the run loaded, or one loaded once and shared by every
    latency round and by sweep points that only differ in export pruning, search or engine settings."""
    key = _model_key(settings, dataset)
    if key not in models:
        models[key] = load_model(settings, dataset, work)
    return models[key]


def _latency(system: SystemEntry, dataset: Dataset, run_dir: Path, cfg, models: dict[str, Any], work: Path,
             first: bool = True) -> dict[str, Any]:
    """One single-thread latency measurement of one system: ``samples_ms`` per part (``total``; SPLADE also
    ``encode`` and ``search``), in query order, and the protocol (:mod:`lsr_eval.efficiency.latency`); in the
    ``first`` round also the query encoder's GFLOP (the later rounds keep only their samples)."""
    from lsr_eval.anserini.searcher import Bm25Searcher
    from lsr_eval.efficiency.passes import engine_calls, pooled_samples, timed_passes

    manifest = read_manifest(run_dir) or {}
    queries = dataset.queries()[: cfg.latency_queries + cfg.warmup]
    passes = {"timed_passes": cfg.timed_passes} if cfg.timed_passes else {}
    if system.kind == "bm25" and system.params.get("engine", DEFAULT_ENGINE) == "pisa":
        from lsr_eval.efficiency.latency import query_path
        from lsr_eval.pipeline.bm25 import Bm25Settings, open_bm25_pisa

        searcher, analyzer = open_bm25_pisa(Bm25Settings(**system.params), Path(manifest["index"]["path"]))
        with searcher:  # the query path as SPLADE's: text -> weights (Anserini's analysis) -> PISA
            path = query_path(lambda text, qid, stats: analyzer.counts(text), searcher, cfg.hits)
            measured = [path(q) for q in queries][cfg.warmup:]
            samples = {part: [r[part] for r in measured] for part in ("encode", "search", "total")}
            if cfg.timed_passes:  # PISA's protocol over the engine's own call (the search times above dropped)
                samples = pooled_samples(samples["encode"], engine_calls(searcher, [r["weights"] for r in measured],
                                                                         cfg.hits), cfg.timed_passes)
        engine = {k: v for k, v in searcher.describe().items() if k != "index"}  # the run's manifest has the index
        return {"k": cfg.hits, "warmup_queries": cfg.warmup, "engine": engine | {"k": cfg.hits}, **passes,
                "samples_ms": samples}
    if system.kind == "bm25":
        from lsr_eval.efficiency.latency import timed

        params = {key: system.params[key] for key in ("k1", "b", "fields") if key in system.params}
        with Bm25Searcher(manifest["index"]["path"], **params) as s:
            if cfg.timed_passes:  # the warm-up queries once, then PISA's protocol over the measured ones
                for q in queries[:cfg.warmup]:
                    s.search(q.text, cfg.hits)
                ms = timed_passes(engine_calls(s, [q.text for q in queries[cfg.warmup:]], cfg.hits),
                                  cfg.timed_passes)
            else:
                ms, _ = timed(lambda q: s.search(q.text, cfg.hits), queries, cfg.warmup)
        return {"k": cfg.hits, "warmup_queries": cfg.warmup, **passes, "samples_ms": {"total": ms}}
    from lsr_eval.efficiency.latency import measure_latency

    settings = _splade_settings(system)
    model = _model_for(settings, models, dataset, work)
    runtime = "torch" if model.inference_free else cfg.query_runtime  # a table lookup has no ONNX form
    with open_searcher(settings, manifest["paths"]["index"]) as s:
        lat = measure_latency(queries, model.query, s, k=cfg.hits, scale=manifest["quantization"]["scale"],
                              warmup=cfg.warmup, runtime=runtime, work_dir=work,
                              passes=cfg.timed_passes).to_dict(samples=True)
    lat.pop("latency_ms")
    if first:
        from lsr_eval.efficiency.encoder_flops import query_encoder_cost

        lat["query_encoder"] = query_encoder_cost(model.query, [q.text for q in queries[cfg.warmup:]]).to_dict()
    return lat


def _measure_latencies(pending: dict[str, tuple[SystemEntry, Path]], dataset: Dataset, cfg,
                       models: dict[str, Any], work: Path) -> dict[str, dict[str, Any]]:
    """Latency of every pending system, in ``cfg.rounds`` rounds; each round measures every system in turn
    (starting one system later than the round before), and each query keeps, per part, its fastest time over the
    rounds: load from other processes then hits every system alike and its spikes drop out. A system whose
    measurement fails is left out (logged)."""
    names = list(pending)
    out: dict[str, dict[str, Any]] = {}
    for r in range(cfg.rounds):
        for name in names[r % len(names):] + names[: r % len(names)] if names else []:
            if r and name not in out:
                continue  # failed in an earlier round
            system, run_dir = pending[name]
            try:
                lat = _latency(system, dataset, run_dir, cfg, models, work, first=not r)
            except (LsrEvalError, KeyError, OSError) as e:
                log.error("latency of %s failed: %s", name, e)
                out.pop(name, None)
                continue
            if name not in out:
                out[name] = lat
            else:
                best = out[name]["samples_ms"]
                for part, ms in lat["samples_ms"].items():
                    best[part] = [min(a, b) for a, b in zip(best[part], ms)]
    for lat in out.values():
        per_query = f"pooled over {cfg.passes} timed passes after an untimed one (PISA's queries tool)" \
            if cfg.timed_passes else "fastest over the rounds" if cfg.rounds > 1 else "one round"
        lat.update(rounds=cfg.rounds, per_query=per_query)
        if "encode" in lat["samples_ms"] and cfg.rounds > 1:  # min per part: total is min of totals, not a sum
            lat["note"] = "encode, search and total: each its own per-query minimum over the rounds"
    return out


def _latency_columns(lat: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Row columns and the latency record of ``efficiency.json`` from :func:`_measure_latencies` output (the
    per-query samples are in the record's ``samples_ms``)."""
    from lsr_eval.efficiency.latency import LatencySummary

    summaries = {part: LatencySummary.from_ms(ms).to_dict() for part, ms in lat["samples_ms"].items()}
    total = summaries["total"]
    row = {"latency_mean_ms": total["mean_ms"], "latency_p50_ms": total["p50_ms"], "latency_p99_ms": total["p99_ms"]}
    if "encode" in summaries:
        row.update(latency_encode_p50_ms=summaries["encode"]["p50_ms"],
                   latency_search_p50_ms=summaries["search"]["p50_ms"],
                   latency_search_mean_ms=summaries["search"]["mean_ms"],
                   latency_search_p99_ms=summaries["search"]["p99_ms"],
                   latency_encode_mean_ms=summaries["encode"]["mean_ms"])
    if "query_encoder" in lat:
        row["query_encoder_gflop"] = lat["query_encoder"]["gflop_per_query"]
    return row, {**lat, "latency_ms": summaries}


def system_engine(system: SystemEntry) -> str | None:
    """The engine that searches a system's index (None: a run file's)."""
    return None if system.kind == "run" else system.params.get("engine", DEFAULT_ENGINE)


def _bm25_reference(rows: dict[str, Row], systems: dict[str, SystemEntry]) -> dict[str, dict[str, Any]]:
    """Each row's latency against the BM25 measured in the same run on the same engine (same k, one thread, the
    same rounds): ``latency_ratio_bm25`` (mean to mean, query text to ranked list) and, where both split it,
    ``latency_search_ratio_bm25`` (search to search), with ``latency_reference`` naming that BM25; the first BM25
    system per engine is the reference. A ratio travels between machines better than a time: both sides ran on
    the same CPU, the same engine, side by side."""
    def latency(name: str | None, part: str = "latency_mean_ms") -> float | None:
        return rows[name].get(part) if name in rows else None

    reference: dict[str, str] = {}
    for name, system in systems.items():
        if system.kind == "bm25" and latency(name) is not None:
            reference.setdefault(system_engine(system), name)
    out: dict[str, dict[str, Any]] = {}
    for name, system in systems.items():
        ref = reference.get(system_engine(system))
        if ref is None or latency(name) is None:
            continue
        cols: dict[str, Any] = {"latency_reference": ref, "latency_ratio_bm25": latency(name) / latency(ref)}
        search, base = latency(name, "latency_search_mean_ms"), latency(ref, "latency_search_mean_ms")
        if search is not None and base is not None:
            cols["latency_search_ratio_bm25"] = search / base
        out[name] = cols
    return out


def _fusion_cost(entry: FusionEntry, by_name: dict[str, Row]) -> dict[str, Any]:
    """Columns of a fusion's cost from its parts' rows (nothing when a part lacks a cost); FLOPs summed from a
    declared part are marked declared."""
    from lsr_eval.efficiency.fusion_cost import fusion_cost

    parts = [by_name.get(r, Row("", r)) for r in entry.runs]
    cost = fusion_cost([p.get("flops") for p in parts], {r: p.latency_samples_ms for r, p in zip(entry.runs, parts)})
    row = cost.row()
    declared = [r for r, p in zip(entry.runs, parts) if "flops" in str(p.get("declared_costs", "")).split(",")]
    if "flops" in row and declared:
        row.update(declared_costs="flops", cost_source=f"sum of its parts' FLOPs; declared for {', '.join(declared)}")
    return row


def _declared_costs(system: SystemEntry) -> dict[str, Any]:
    """A ``kind: run`` system's declared costs as row columns (see docs/design.md); nothing when none."""
    costs = system.params.get("costs") or {}
    columns = {DECLARED_COSTS[k]: float(costs[k]) for k in DECLARED_COSTS if k in costs}
    if not columns:
        return {}
    return {**columns, "declared_costs": ",".join(columns), "cost_source": costs["source"]}


def _judged_without_results(row: Row, qrels, run, what: str) -> None:
    """``judged_without_results`` of ``row``, warned about when some judged queries have no result."""
    from lsr_eval.evaluation import count_queries

    counts = count_queries(qrels, run)
    row.cells["judged_without_results"] = counts.judged_without_results
    if counts.judged_without_results:
        log.warning("%s: %d of %d judged queries have no result in the run (they count 0)", what,
                    counts.judged_without_results, counts.judged)


def _significance(sig: SignificanceEntry, qrels, runs: dict[str, Any], by_name: dict[str, Row],
                  measures: list[str], label: str) -> None:
    """Tests of every run against each baseline (:func:`lsr_eval.significance.compare`), written into the rows
    (columns: see docs/design.md)."""
    from lsr_eval.evaluation import evaluate
    from lsr_eval.significance.compare import compare

    names = list(sig.measures) or measures
    present = [b for b in sig.baselines if b in runs]
    for b in sig.baselines:
        if b not in runs:
            log.error("significance on %s: baseline %s has no run (failed): not tested against it", label, b)
    if not present or len(runs) < 2:
        return
    per_query = {name: evaluate(qrels, run, names, per_query=True) for name, run in runs.items()}
    for b in present:
        df = compare(per_query, b, test=sig.test, alpha=sig.alpha, correction=sig.correction)
        for rec in df.to_dict("records"):
            r, m = by_name[rec["system"]], rec["measure"]
            if rec["system"] != b:
                r.raw_p[(b, m)] = (rec["p_value"], rec["difference"])
            _mark(r, sig, b, m, rec["p_corrected"], rec["difference"])
            if len(sig.baselines) > 1:
                r.cells["baselines"] = ",".join(sig.baselines)


def _mark(row: Row, sig: SignificanceEntry, b: str, m: str, p: float, difference: float) -> None:
    """Write the corrected ``p`` of ``row`` against baseline ``b`` on measure ``m``, and its marker."""
    from lsr_eval.significance.compare import direction_marker

    marker = direction_marker(bool(p < sig.alpha), difference)
    if b == sig.baselines[0]:
        row.cells.update({f"{m}_sig": marker, f"{m}_p": p, "baseline": b})
    if len(sig.baselines) > 1:
        row.cells.update({f"{m}_sig_vs_{b}": marker, f"{m}_p_vs_{b}": p})


def _across_datasets(sig: SignificanceEntry, rows: list[Row]) -> list[Row]:
    """``significance.across_datasets``: each baseline's family is every (dataset, system, measure) tested against
    it, corrected together (replacing the per-dataset correction in the rows), and pooled rows are added: per system
    and measure, the mean over the datasets where it has an ok value (``<measure>_datasets`` counts them), tested
    against the baseline's when the baseline has values on those same datasets, by a paired t-test over the
    datasets' means (each dataset counts once, whatever its number of queries, so that the large sets do not
    dominate), corrected over their own family (systems x measures). Returns the pooled rows."""
    from lsr_eval.significance.correction import correct
    from lsr_eval.significance.ttest import paired_t_test

    names = list(dict.fromkeys(m for r in rows for (_, m) in r.raw_p))   # the measures tested
    ok = {(r.dataset, r.system): r for r in rows if r.ok}
    datasets = list(dict.fromkeys(r.dataset for r in rows))

    def has(d: str, system: str, m: str) -> bool:
        value = ok[(d, system)].get(m) if (d, system) in ok else None
        return isinstance(value, (int, float)) and not math.isnan(value)

    pooled: dict[str, Row] = {}
    for system in dict.fromkeys(r.system for r in rows):   # the means: over the datasets where it ran
        for m in names:
            where = [d for d in datasets if has(d, system, m)]
            if len(where) >= 2:
                row = pooled.setdefault(system, Row(POOLED, system, {"kind": ok[(where[0], system)].get("kind", "")}))
                row.cells[m] = math.fsum(float(ok[(d, system)].get(m)) for d in where) / len(where)
                row.cells[f"{m}_datasets"] = len(where)
    for b in sig.baselines:
        family = [(r, m) for r in rows for (base, m) in r.raw_p if base == b]
        if not family:   # the baseline ran nowhere: nothing was tested against it
            continue
        for (r, m), p in zip(family, correct([r.raw_p[(b, m)][0] for r, m in family], sig.correction)):
            _mark(r, sig, b, m, p, r.raw_p[(b, m)][1])
        tests = []
        for system, row in pooled.items():
            for m in (names if system != b else []):
                both = [d for d in datasets if has(d, system, m) and has(d, b, m)]
                if len(both) < 2 or len(both) != row.cells.get(f"{m}_datasets"):
                    continue   # tested only over the datasets its mean is over
                mine = [float(ok[(d, system)].get(m)) for d in both]
                base = [float(ok[(d, b)].get(m)) for d in both]
                tests.append((row, m, paired_t_test(base, mine).p_value,
                              math.fsum(mine) / len(mine) - math.fsum(base) / len(base)))
        for (row, m, _, diff), p in zip(tests, correct([t[2] for t in tests], sig.correction) if tests else []):
            _mark(row, sig, b, m, p, diff)
    return list(pooled.values())


def _system_columns(system: SystemEntry) -> dict[str, Any]:
    """Identity columns of a system's row: kind, model, the MLM-head rescaling ``k`` of a system that sets
    ``rescale_k`` (no other row has the column), the engine, the precision a SPLADE model runs in (resolved on its
    device, as in the run's identity), and for a sweep point its sweep, label and values."""
    if system.kind == "run":
        return {"kind": "run", "model": "", **({"display_name": system.params["display_name"]}
                                               if system.params.get("display_name") else {})}
    row = {"kind": system.kind, "model": system.params.get("model", "")}
    if system.params.get("rescale_k") is not None:
        row["k"] = system.params["rescale_k"]
    row["engine"] = system.params.get("engine", DEFAULT_ENGINE)
    if system.kind == "splade":
        row["precision"] = _splade_settings(system).resolved_precision().name
    if system.sweep:
        row.update(sweep=system.sweep, point=system.point)
        for key, (field, _) in SWEEP_KEYS.items():
            if field in system.params and system.params[field] is not None:
                row[key] = system.params[field]
    return row


SMALL_FILES = ("metrics.json", "manifest.json", "efficiency.json")


def _copy_small(run_dir: Path, dest: Path) -> None:
    check_copy(read_manifest(run_dir) or {}, dest, run_dir)  # no run of uncommitted code under results/
    dest.mkdir(parents=True, exist_ok=True)
    for name in SMALL_FILES:
        if (run_dir / name).exists():
            shutil.copyfile(run_dir / name, dest / name)
    if (dest / MANIFEST).exists():   # under results/, the copy records anchored paths
        update_manifest(dest)


@dataclasses.dataclass
class _Bench:
    """What every dataset's steps share: the config, the systems, where runs and results go, and what the
    benchmark learns on the way (dataset fingerprints, datasets that could not be read, hub ids tried)."""

    cfg: BenchmarkConfig
    systems: list[SystemEntry]
    work: Path
    threads: int
    run_root: Path
    out: Path
    data: dict[str, Any] = dataclasses.field(default_factory=dict)  # fingerprint of each dataset the table used
    unavailable: dict[str, str] = dataclasses.field(default_factory=dict)  # datasets that could not be read
    probed: dict[str, str | None] = dataclasses.field(default_factory=dict)  # hub ids tried: None, or why not


@dataclasses.dataclass
class _DatasetRuns:
    """One dataset's part of the benchmark: its rows (in table order, also by system name), its runs, and what
    its efficiency step needs (systems whose latency is to be measured, loaded models, FLOPs records)."""

    entry: DatasetEntry
    dataset: Dataset
    label: str
    measures: list[str]
    rows: list[Row] = dataclasses.field(default_factory=list)
    by_name: dict[str, Row] = dataclasses.field(default_factory=dict)
    runs: dict[str, Any] = dataclasses.field(default_factory=dict)
    pending: dict[str, tuple[SystemEntry, Path]] = dataclasses.field(default_factory=dict)
    models: dict[str, Any] = dataclasses.field(default_factory=dict)  # SPLADE models the runs loaded
    flops: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        self.by_name[row.system] = row


@dataclasses.dataclass
class _TuneSplit:
    """A dataset's tune split for fusions tuned on it: its runs and qrels, or why it failed (empty when not)."""

    runs: dict[str, Any] | None = None
    qrels: Any = None
    failed: RowStatus | None = None


def _with_device(systems: list[SystemEntry], device: str | None) -> list[SystemEntry]:
    """The systems with every SPLADE system's ``device`` replaced by ``device`` (checked), when given."""
    if device is None:
        return systems

    check_device(device)
    return [dataclasses.replace(s, params={**s.params, "device": device}) if s.kind == "splade" else s
            for s in systems]


def _open_dataset(entry: DatasetEntry, bench: _Bench) -> _DatasetRuns:
    """Load one dataset entry and record its fingerprint (which reads the data: a registry dataset that is not
    there fails here, not at load)."""
    dataset = load_dataset(entry.spec, entry.split)
    label = _label(entry, dataset)
    bench.data[label] = dataset.fingerprint()
    if entry.measures:
        dataset.measures = tuple(entry.measures)
    return _DatasetRuns(entry, dataset, label, list(dataset.measures))


def _unavailable_rows(entry: DatasetEntry, bench: _Bench, error: LsrEvalError) -> list[Row]:
    """Rows of a dataset that could not be read (e.g. offline without a seeded cache): every system and fusion
    failed, saying why."""
    label = entry.label or _slug(entry.spec.replace("/", "-"))
    log.error("dataset %s is not available: %s", label, error)
    bench.unavailable[label] = str(error)
    return [Row(label, s.name, status=RowStatus(Status.FAILED, f"dataset not available: {error}"))
            for s in [*bench.systems, *bench.cfg.fusion]]


def _run_into(system: SystemEntry, row: Row, run_dir: Path, ds: _DatasetRuns, bench: _Bench) -> None:
    """Run one system on the dataset and fill its row with metrics and columns (raises when it cannot run)."""
    why = _unloadable(system, bench.probed, ds.label)
    if why is not None:
        raise LsrEvalError(why)
    result = run_system(system, ds.dataset, run_dir, bench.work, bench.threads)
    row.cells.update(result.metrics)
    row.cells.update(result.columns)
    row.cells.update(_declared_costs(system))
    _judged_without_results(row, ds.dataset.qrels(), result.run, f"{system.name} on {ds.label}")
    ds.runs[system.name] = result.run
    if result.model is not None:
        ds.models.setdefault(_model_key(_splade_settings(system), ds.dataset), result.model)


def _costs_into(system: SystemEntry, row: Row, run_dir: Path, ds: _DatasetRuns) -> None:
    """A run's FLOPs and index columns, and the system queued for latency; a failure leaves the run standing and
    its efficiency cells saying why."""
    try:
        costs, ds.flops[system.name] = _costs(system, ds.dataset, run_dir)
        row.cells.update(costs)
        ds.pending[system.name] = (system, run_dir)
    except (LsrEvalError, KeyError, OSError) as e:
        log.error("efficiency of %s on %s failed: %s", system.name, ds.label, e)
        row.cells["efficiency_status"] = RowStatus(Status.FAILED, str(e))


def _system_row(system: SystemEntry, ds: _DatasetRuns, bench: _Bench) -> None:
    """One system's row on the dataset: its run (reused when done) and, with efficiency, its costs."""
    run_dir = bench.run_root / system.name / ds.label
    row = Row(ds.label, system.name, _system_columns(system))
    try:
        _run_into(system, row, run_dir, ds, bench)
    except LsrEvalError as e:
        log.error("%s on %s failed: %s", system.name, ds.label, e)
        row.fail(e)
    if bench.cfg.efficiency and system.name in ds.runs and system.kind != "run":  # a run's costs are declared
        _costs_into(system, row, run_dir, ds)
    ds.add(row)


def _latency_rows(ds: _DatasetRuns, bench: _Bench) -> None:
    """Latency of the dataset's pending systems (after every run: the rounds interleave the systems), into their
    rows and each run's ``efficiency.json`` (FLOPs only on a dataset whose queries are not timed:
    ``efficiency.latency_datasets``)."""
    timed = bench.cfg.efficiency.times(ds.entry, ds.label)
    latencies = _measure_latencies(ds.pending, ds.dataset, bench.cfg.efficiency, ds.models, bench.work) \
        if timed else {}
    records: dict[str, tuple[Path, dict[str, Any]]] = {}
    for name, (_, run_dir) in ds.pending.items():
        record: dict[str, Any] = {"flops": ds.flops[name]}
        if name in latencies:
            columns, record["latency"] = _latency_columns(latencies[name])
            ds.by_name[name].cells.update(columns)
            ds.by_name[name].latency_samples_ms = latencies[name]["samples_ms"]["total"]
        elif timed:
            ds.by_name[name].cells["efficiency_status"] = RowStatus(Status.FAILED, "latency (see the log)")
        records[name] = (run_dir, record)
    ratios = _bm25_reference(ds.by_name, {name: system for name, (system, _) in ds.pending.items()})
    for name, (run_dir, record) in records.items():
        if name in ratios:
            ds.by_name[name].cells.update(ratios[name])
            record.setdefault("latency", {})["bm25_reference"] = ratios[name]
        (run_dir / "efficiency.json").write_text(json.dumps(record, indent=2, default=str) + "\n")


def _tune_split(ds: _DatasetRuns, bench: _Bench) -> _TuneSplit:
    """The tune split's runs of the systems a tuned fusion needs (none when no fusion tunes on a split); a failure
    leaves the untuned rows standing and tells the tuned fusions why they have no number."""
    entry = ds.entry
    if not entry.tune_split or not any(f.tune_on_split for f in bench.cfg.fusion):
        return _TuneSplit()
    tuned = {r for f in bench.cfg.fusion if f.tune_on_split for r in f.runs}
    try:
        tune_ds = load_dataset(entry.spec, entry.tune_split)
        qrels = tune_ds.qrels()
        bench.data[f"{ds.label}@{entry.tune_split}"] = tune_ds.fingerprint()
        runs = {}
        for system in (s for s in bench.systems if s.name in tuned):  # only what a tuned fusion needs
            d = bench.run_root / system.name / f"{ds.label}@{entry.tune_split}"
            runs[system.name] = run_system(system, tune_ds, d, bench.work, bench.threads).run
    except LsrEvalError as e:
        log.error("tune split %s of %s failed: %s", entry.tune_split, ds.label, e)
        return _TuneSplit(failed=RowStatus(Status.FAILED, f"tune split {entry.tune_split}: {e}"))
    return _TuneSplit(runs, qrels)


def _fusion_blocked(f: FusionEntry, ds: _DatasetRuns, tune: _TuneSplit) -> RowStatus | None:
    """Why fusion ``f`` is not run on the dataset (its status), or None when it can run."""
    missing = [r for r in f.runs if r not in ds.runs]
    if missing:
        return RowStatus(Status.NOT_RUN, f"inputs failed ({', '.join(missing)})")
    if f.tune_on_split and not ds.entry.tune_split:
        return RowStatus(Status.NOT_RUN, f"no tune_split on {ds.label} (no train or dev split to tune on)")
    if f.tune_on_split and tune.failed:
        return tune.failed
    return None


def _fuse_into(f: FusionEntry, row: Row, ds: _DatasetRuns, tune: _TuneSplit, bench: _Bench) -> None:
    """Fuse, evaluate and cost one fusion into its row; its small files copied to the results."""
    run_dir = bench.run_root / f.name / ds.label
    metrics, ds.runs[f.name] = _fuse(f, ds.runs, tune.runs, ds.dataset.qrels(), tune.qrels, ds.measures, run_dir)
    row.cells.update(metrics)
    _judged_without_results(row, ds.dataset.qrels(), ds.runs[f.name], f"{f.name} on {ds.label}")
    _copy_small(run_dir, bench.out / "runs" / f.name / ds.label)
    if bench.cfg.efficiency or any(ds.by_name[r].get("declared_costs") for r in f.runs if r in ds.by_name):
        row.cells.update(_fusion_cost(f, ds.by_name))


def _fusion_row(f: FusionEntry, ds: _DatasetRuns, tune: _TuneSplit, bench: _Bench) -> None:
    """One fusion's row on the dataset: its numbers, or why it has none."""
    row = Row(ds.label, f.name, {"kind": "fusion", "model": ""})
    blocked = _fusion_blocked(f, ds, tune)
    if blocked is not None:
        row.status = blocked
    else:
        try:
            _fuse_into(f, row, ds, tune, bench)
        except LsrEvalError as e:
            row.fail(e)
    ds.add(row)


def _run_dataset(entry: DatasetEntry, bench: _Bench) -> list[Row]:
    """Every row of one dataset: systems, their efficiency, fusions, then significance over all of them."""
    try:
        ds = _open_dataset(entry, bench)
    except LsrEvalError as e:
        return _unavailable_rows(entry, bench, e)
    for system in bench.systems:
        _system_row(system, ds, bench)
    if bench.cfg.efficiency:
        _latency_rows(ds, bench)
    for system in bench.systems:
        _copy_small(bench.run_root / system.name / ds.label, bench.out / "runs" / system.name / ds.label)
    tune = _tune_split(ds, bench)
    for f in bench.cfg.fusion:
        _fusion_row(f, ds, tune, bench)
    if bench.cfg.significance:
        _significance(bench.cfg.significance, ds.dataset.qrels(), ds.runs, ds.by_name, ds.measures, ds.label)
    return ds.rows


def table_of(rows: list[Row]):
    """The rows as the table (pandas) holds them: their records, columns in order of first appearance, except that
    a rescaled system's ``k`` stands beside ``model`` wherever its first row is."""
    import pandas as pd

    table = pd.DataFrame([r.record() for r in rows])
    if "k" in table.columns:
        columns = [c for c in table.columns if c != "k"]
        at = columns.index("model") + 1 if "model" in columns else len(columns)
        table = table[columns[:at] + ["k"] + columns[at:]]
    return table


def _write_table(bench: _Bench, rows: list[Row]):
    """The results table (pandas) written as ``table.csv`` and ``table.json``, with the benchmark's manifest."""
    cfg, out = bench.cfg, bench.out
    table = table_of(rows)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "table.csv", index=False)
    table.to_json(out / "table.json", orient="records", indent=2)
    write_manifest(out, "benchmark", {"config": cfg.source, "name": cfg.name},
                   config=json.loads(json.dumps({**asdict(cfg), "systems": [asdict(s) for s in bench.systems]},
                                                default=str)),
                   runs_dir=str(bench.run_root), data=bench.data, unavailable=bench.unavailable,
                   significance_markers={"†": "significantly better than the baseline", "↓": "significantly worse"},
                   counts={"rows": len(table), "failed": int((table["status"].map(kind_of) == Status.FAILED).sum())},
                   outputs=["table.csv", "table.json", "runs/"])
    return table


def run_benchmark(cfg: BenchmarkConfig, work: Path, threads: int = 2, device: str | None = None,
                  runs_dir: Path | None = None):
    """Run (or resume) the benchmark; returns the results table (pandas). ``device`` (``auto``, ``cpu``,
    ``cuda[:N]``) replaces every SPLADE system's ``device``. ``runs_dir`` (default ``<work>/benchmarks/<name>/runs``)
    holds the runs: another folder makes every run again while indexes and encodings still come from ``work``.
    The manifest records each dataset's fingerprint (``data``: :meth:`~lsr_eval.data.datasets.Dataset.fingerprint`,
    the tune splits as ``<label>@<split>``)."""
    out = Path(cfg.out)
    check_provenance(out)  # refuse uncommitted code before the runs, not after them
    check_on_disk(cfg)  # model folders, before any run
    run_root = Path(runs_dir) if runs_dir is not None else work / "benchmarks" / _slug(cfg.name) / "runs"
    bench = _Bench(cfg, _with_device(cfg.all_systems(), device), work, threads, run_root, out)
    rows: list[Row] = []
    for entry in expand_datasets(cfg.datasets):
        rows += _run_dataset(entry, bench)
    if cfg.significance and cfg.significance.across_datasets:
        rows += _across_datasets(cfg.significance, rows)
    return _write_table(bench, rows)
