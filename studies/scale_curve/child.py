"""One run of the scale curve (:mod:`studies.scale_curve.scaling`), meant for a process of its own so that its
peak memory is its own: the shared export stage of one size, then index -> search -> evaluate on one engine, each
stage timed with its memory sampled and the record rewritten after every stage."""

from __future__ import annotations

import json
import shutil
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from lsr_eval.export.queries import WeightMaps, read_query_jsonl
from lsr_eval.manifest import write_json
from lsr_eval.workdir import folder_bytes
from studies.harness.agreement import run_digests
from studies.harness.measure import MB, Monitor
from studies.scale_curve.scaling import SHARED, STAGES
from studies.scale_curve.synthetic import DataSpec
from studies.scale_curve.synthetic_export import write_synthetic

if TYPE_CHECKING:
    from lsr_eval.data.types import Run
    from lsr_eval.engines.base import Engine

#: Written last into a generated collection's folder: its spec, counts and how long it took.
GENERATED = "generated.json"


def ensure_collection(work: Path, n_docs: int, spec: DataSpec, regenerate: bool) -> dict[str, Any]:
    """The generated data for ``n_docs`` in ``work/docs-N/`` (made, or reused when its spec matches)."""
    folder = work / f"docs-{n_docs}"
    meta_path = folder / GENERATED
    want = {"documents": n_docs, "spec": asdict(spec)}
    if meta_path.exists() and not regenerate:
        meta = json.loads(meta_path.read_text())
        if meta.get("key") == want and (meta.get("export_record") or {}).get("seconds") is not None:
            meta["reused"] = True
            return meta
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    stats = write_synthetic(folder, n_docs, spec)
    meta = {"key": want, "folder": str(folder), "created": time.strftime("%Y-%m-%dT%H:%M:%S"), **stats}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    meta["reused"] = False
    return meta



def error_text(e: BaseException) -> str:
    """An exception as one line: its type and message."""
    return f"{type(e).__name__}: {e}"



def export_stage(work: Path, n_docs: int, spec: DataSpec, regenerate: bool, result_path: Path,
                 interval: float) -> dict[str, Any]:
    """The shared export stage of one size: the synthetic collection made (or reused, with the figures of the run
    that made it), timed and its memory sampled; the record written to ``result_path``."""
    monitor = Monitor(interval)
    record: dict[str, Any] = {"stage": "export", "engine": SHARED, "docs": n_docs, "status": "running"}
    result = {"docs": n_docs, "engine": SHARED, "stages": [record]}
    try:
        with monitor.stage(record):
            meta = ensure_collection(work, n_docs, spec, regenerate)
    except Exception as e:  # noqa: BLE001 - recorded
        record.update(status="failed", error=error_text(e), traceback=traceback.format_exc())
        write_json(result_path, result, default=str)
        return result
    if meta["reused"]:  # report the generation run's own figures
        old = meta.get("export_record") or {}
        record.update({k: v for k, v in old.items() if k not in ("status", "note")})
        record["note"] = f"reused collection generated {meta.get('created')}"
    else:
        meta_path = work / f"docs-{n_docs}" / GENERATED
        stored = json.loads(meta_path.read_text())
        stored["export_record"] = {k: v for k, v in record.items() if k not in ("status",)}
        meta_path.write_text(json.dumps(stored, indent=2) + "\n")
    record.update(status="ok", postings=meta["postings"], documents=meta["documents"],
                  collection_mb=round(meta["collection_bytes"] / MB, 1),
                  generate_seconds=meta["generate_seconds"], write_seconds=meta["write_seconds"])
    result["collection"] = {k: v for k, v in meta.items() if k != "export_record"}
    write_json(result_path, result, default=str)
    return result



def engine_stages(work: Path, n_docs: int, engine_name: str, result_path: Path, *, key: Mapping[str, Any], k: int,
                  threads: int, interval: float, keep_index: bool) -> dict:
    """index -> search -> evaluate for one engine on the collection of ``n_docs`` (made by :func:`export_stage`);
    the result file is rewritten after every stage so a crash of the process still leaves what was measured."""
    data = work / f"docs-{n_docs}"
    meta = json.loads((data / GENERATED).read_text())
    monitor = Monitor(interval)
    result: dict[str, Any] = {"docs": n_docs, "engine": engine_name, "stages": [], "setup": {},
                              "key": dict(key),
                              "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    stages = {s: {"stage": s, "engine": engine_name, "docs": n_docs, "status": "pending"} for s in STAGES[1:]}
    result["stages"] = list(stages.values())
    save = lambda: write_json(result_path, result, default=str)  # noqa: E731

    engine = _open_engine(engine_name, monitor, result, stages)
    save()
    if engine is None:
        return result

    index = work / "indexes" / f"{engine_name}-{n_docs}"
    if index.exists():
        shutil.rmtree(index)
    index.parent.mkdir(parents=True, exist_ok=True)
    _begin(stages["index"], save)
    _index_stage(engine, data, index, meta, stages["index"], monitor, threads)
    save()
    if stages["index"]["status"] != "ok":
        _skip_rest(stages, "index", "index stage failed")
        save()
        _remove_index(index, keep_index)
        return result

    queries = read_query_jsonl(data / "queries.jsonl")
    qrels = json.loads((data / "qrels.json").read_text())
    _begin(stages["search"], save)
    run = _search_stage(engine, index, queries, stages["search"], monitor, k, threads)
    save()
    _remove_index(index, keep_index)
    if stages["search"]["status"] != "ok":
        _skip_rest(stages, "search", "search stage failed")
        save()
        return result

    _begin(stages["evaluate"], save)
    _evaluate_stage(qrels, run, stages["evaluate"], monitor)
    result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    save()
    monitor.stop()
    return result


def _open_engine(engine_name: str, monitor: Monitor, result: dict[str, Any],
                 stages: Mapping[str, dict[str, Any]]) -> Engine | None:
    """The engine (for anserini with its JVM started and its heap sampled by ``monitor``), setup timed into
    ``result["setup"]``; None when it cannot be had, every stage then marked failed."""
    from lsr_eval.engines.registry import get_engine

    try:
        t0 = time.perf_counter()
        engine = get_engine(engine_name)
        result["setup"]["engine_seconds"] = round(time.perf_counter() - t0, 3)
        if engine_name == "anserini":
            from lsr_eval.anserini.jvm import start
            from lsr_eval.anserini.search_collection import JvmMemory

            t0 = time.perf_counter()
            start()
            result["setup"]["jvm_start_seconds"] = round(time.perf_counter() - t0, 3)
            monitor.memory = JvmMemory()
        result["setup"]["describe"] = engine.describe()
    except Exception as e:  # noqa: BLE001 - recorded
        result["setup"]["error"] = error_text(e)
        for s in STAGES[1:]:
            stages[s].update(status="failed", note=f"engine unavailable: {error_text(e)}")
        return None
    return engine


def _begin(rec: dict[str, Any], save: Callable[[], None]) -> None:
    """Mark a stage running and save, so a crash inside it shows where it happened."""
    rec["status"] = "running"
    save()


def _skip_rest(stages: Mapping[str, dict[str, Any]], after: str, why: str) -> None:
    """Mark the still-pending stages after ``after`` skipped, with ``why``."""
    for s in STAGES[STAGES.index(after) + 1:]:
        if stages[s]["status"] == "pending":
            stages[s].update(status="skipped", note=why)


def _index_stage(engine: Engine, data: Path, index: Path, meta: Mapping[str, Any], rec: dict[str, Any],
                 monitor: Monitor, threads: int) -> None:
    """Build the index of ``data``'s collection into ``rec``: counts checked against the generated ones; a
    failure is recorded, not raised."""
    try:
        with monitor.stage(rec):
            counts = engine.build(data / "collection", index, threads=threads)
        rec.update(status="ok", documents_read=counts.documents_read, documents_indexed=counts.documents_indexed,
                   postings=meta["postings"], index_mb=round(folder_bytes(index) / MB, 1),
                   engine_build_seconds=round(counts.seconds, 3))
        if not counts.documents_read == counts.documents_indexed == meta["documents"]:
            rec.update(status="failed", note=f"counts differ: {meta['documents']} written, "
                                             f"{counts.documents_read} read, {counts.documents_indexed} indexed")
    except Exception as e:  # noqa: BLE001 - recorded
        rec.update(status="failed", error=error_text(e), traceback=traceback.format_exc())


def _search_stage(engine: Engine, index: Path, queries: WeightMaps, rec: dict[str, Any], monitor: Monitor, k: int,
                  threads: int) -> Run | None:
    """Open ``index`` and search every query into ``rec`` (timings, counts, run digests, consistency checked);
    the run (None when the search itself failed). A failure is recorded, not raised."""
    run = None
    try:
        with monitor.stage(rec):
            t0 = time.perf_counter()
            searcher = engine.open(index)
            rec["open_seconds"] = round(time.perf_counter() - t0, 3)
            try:
                t0 = time.perf_counter()
                run, scounts = searcher.batch_search(queries, k=k, threads=threads)
                rec["batch_search_seconds"] = round(time.perf_counter() - t0, 3)
            finally:
                searcher.close()
        sc = scounts.to_dict()
        rec["run_sha256"], rec["query_sha256"] = run_digests(run)
        rec.update(status="ok", queries=len(queries), k=k, queries_searched=sc["queries"],
                   queries_with_hits=sc["queries_with_hits"], queries_without_hits=sc["queries_without_hits"],
                   queries_in_run=len(run), hits=sc["hits"])
        problems = _search_problems(queries, run, sc, k)
        if problems:
            rec.update(status="failed", note="; ".join(problems))
    except Exception as e:  # noqa: BLE001 - recorded
        rec.update(status="failed", error=error_text(e), traceback=traceback.format_exc())
    return run


def _search_problems(queries: WeightMaps, run: Run, sc: Mapping[str, Any], k: int) -> list[str]:
    """What is wrong with a search's counts and run: queries lost or unasked, hit counts that do not add up,
    more than ``k`` hits."""
    problems = []
    if sc["queries"] != len(queries):
        problems.append(f"{len(queries)} queries given, {sc['queries']} searched")
    if sc["queries_with_hits"] + sc["queries_without_hits"] != len(queries):
        problems.append("queries with + without hits != queries")
    if set(run) - set(queries):
        problems.append("run holds queries that were not asked")
    if any(len(h) > k for h in run.values()):
        problems.append(f"a query has more than k={k} hits")
    return problems


def _evaluate_stage(qrels: Mapping[str, Any], run: Run | None, rec: dict[str, Any], monitor: Monitor) -> None:
    """Evaluate ``run`` against ``qrels`` (default measures) into ``rec``; a failure is recorded, not raised."""
    from lsr_eval.evaluation import evaluate

    try:
        with monitor.stage(rec):
            metrics = evaluate(qrels, run)
        rec.update(status="ok", queries=len(qrels), metrics={m: round(v, 4) for m, v in metrics.items()})
    except Exception as e:  # noqa: BLE001 - recorded
        rec.update(status="failed", error=error_text(e), traceback=traceback.format_exc())



def _remove_index(index: Path, keep: bool) -> None:
    if not keep and index.exists():
        shutil.rmtree(index, ignore_errors=True)

