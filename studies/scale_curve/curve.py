"""The scale curve's parent process (studies/scale_curve/run.py): its options, and the sizes x engines loop that runs
each (size, engine) in a fresh process of the script (:mod:`studies.scale_curve.child`), predicts and enforces
the budget, reuses stored runs, and gathers the rows, fits and exact-engine checks of ``results.json``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, NoReturn, Sequence

from studies.scale_curve.child import engine_stages, export_stage
from studies.scale_curve.scaling import (
    MSMARCO_PASSAGES,
    SHARED,
    STAGES,
    available_memory_mb,
    budget_decision,
    close_result,
    compare_exact,
    fits,
    predict,
    skipped_result,
    table_rows,
)
from studies.scale_curve.synthetic import DataSpec

REPO = Path(__file__).resolve().parents[2]

STAGE = "bench-scale"
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
DEFAULT_ENGINES = ("anserini", "pisa", "seismic")

log = logging.getLogger(__name__)


def run_child(command: Sequence[str], argv: list[str], result_path: Path, timeout_s: float,
              log_path: Path) -> tuple[dict | None, str | None]:
    """Run ``command`` (the script's own command line: ``[python, script]``) on ``argv`` in a fresh process; (its
    result file, a problem or None)."""
    if result_path.exists():
        result_path.unlink()
    cmd = [*command, *argv]
    problem = None
    with open(log_path, "ab") as logf:
        logf.write(f"\n$ {' '.join(cmd)}\n".encode())
        logf.flush()
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_s)
            if rc != 0:
                problem = f"process exited with status {rc} (see {log_path})"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            problem = f"timeout: stopped after {timeout_s / 60:.0f} min (--timeout-minutes)"
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    return result, problem


def parse_args(argv: list[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The options of studies/scale_curve/run.py (``description``: its help's first paragraph), checked."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), help="collection sizes (documents)")
    p.add_argument("--engines", nargs="+", default=list(DEFAULT_ENGINES), help="engines (lsr_eval.engines)")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--k", type=int, default=1000, help="hits per query")
    p.add_argument("--threads", type=int, default=2, help="index and search threads")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--vocab", type=int, default=30_522)
    p.add_argument("--zipf", type=float, default=1.1, help="Zipf exponent of term frequencies")
    p.add_argument("--doc-terms", type=float, default=120.0, help="median active terms per document")
    p.add_argument("--query-terms", type=float, default=25.0, help="median active terms per query")
    p.add_argument("--plant-terms", type=int, default=10, help="terms a query takes from its relevant document")
    p.add_argument("--chunk", type=int, default=50_000, help="documents generated at a time")
    p.add_argument("--file-docs", type=int, default=500_000, help="documents per collection file")
    p.add_argument("--budget-minutes", type=float, default=25.0,
                   help="skip a (size, engine) run whose linear prediction from the previous size exceeds this")
    p.add_argument("--mem-fraction", type=float, default=0.7,
                   help="skip a run whose predicted peak RSS exceeds this fraction of the available memory")
    p.add_argument("--timeout-minutes", type=float, default=60.0, help="stop a run after this long")
    p.add_argument("--session-budget-minutes", type=float, default=None,
                   help="skip a run whose predicted time exceeds what is left of this budget for the whole "
                        "invocation (recorded as skipped, with the prediction)")
    p.add_argument("--force", action="store_true", help="run every (size, engine), whatever the predictions")
    p.add_argument("--sample-interval", type=float, default=0.05, help="memory sampling interval, seconds")
    p.add_argument("--work-dir", type=Path, default=REPO / "work" / "scale",
                   help="generated collections, indexes and per-run records")
    p.add_argument("--out", type=Path, required=False, help="results folder (results/scale for the record)")
    p.add_argument("--overwrite", action="store_true", help="replace a results folder holding another experiment")
    p.add_argument("--regenerate", action="store_true", help="generate the collections again even when cached")
    p.add_argument("--keep-indexes", action="store_true", help="keep the indexes in --work-dir")
    p.add_argument("--reuse-runs", action="store_true",
                   help="reuse a finished (size, engine) run stored in --work-dir/runs with the same settings "
                        "(marked in the table) instead of running it again")
    p.add_argument("--one", nargs=2, metavar=("DOCS", "ENGINE"), help=argparse.SUPPRESS)
    p.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one is None and args.out is None:
        p.error("--out is required")
    if any(n < 1 for n in args.sizes) or args.queries < 1 or args.k < 1 or args.threads < 1:
        p.error("--sizes, --queries, --k and --threads must be >= 1")
    args.sizes = sorted(set(args.sizes))
    from lsr_eval.engines.registry import ENGINES

    unknown = [e for e in args.engines if e not in ENGINES]
    if unknown:
        p.error(f"--engines: unknown {', '.join(unknown)}; known: {', '.join(ENGINES)}")
    return args


def run_key(args: argparse.Namespace, n_docs: int, engine: str) -> dict[str, Any]:
    """What a (size, engine) run's figures depend on: a stored run is reused (``--reuse-runs``) only when equal."""
    return {"docs": n_docs, "engine": engine, "data": asdict(data_spec(args)), "k": args.k, "threads": args.threads}


def reusable(path: Path, key: Mapping[str, Any]) -> dict | None:
    """The stored result at ``path`` when it was made with ``key`` and every stage is ok."""
    if not path.exists():
        return None
    try:
        res = json.loads(path.read_text())
    except ValueError:
        return None
    if json.loads(json.dumps(res.get("key"))) != json.loads(json.dumps(key)):
        return None
    if not res.get("finished") or any(s.get("status") != "ok" for s in res["stages"]):
        return None
    return res


def data_spec(args: argparse.Namespace) -> DataSpec:
    return DataSpec(vocab=args.vocab, zipf=args.zipf, doc_terms=args.doc_terms, query_terms=args.query_terms,
                    plant_terms=args.plant_terms, queries=args.queries, seed=args.seed, chunk=args.chunk,
                    file_docs=args.file_docs).check()


def child_argv(args: argparse.Namespace, n_docs: int, what: str, result: Path) -> list[str]:
    argv = ["--one", str(n_docs), what, "--result", str(result), "--work-dir", str(args.work_dir),
            "--queries", str(args.queries), "--k", str(args.k), "--threads", str(args.threads),
            "--seed", str(args.seed), "--vocab", str(args.vocab), "--zipf", str(args.zipf),
            "--doc-terms", str(args.doc_terms), "--query-terms", str(args.query_terms),
            "--plant-terms", str(args.plant_terms), "--chunk", str(args.chunk), "--file-docs", str(args.file_docs),
            "--sample-interval", str(args.sample_interval), "--engines", *args.engines]
    if args.regenerate:
        argv.append("--regenerate")
    if args.keep_indexes:
        argv.append("--keep-indexes")
    return argv


def run_one(args: argparse.Namespace) -> bool:
    """The child's work (``--one DOCS WHAT``): the export of one size, or one engine's stages; whether every stage
    is ok."""
    n_docs, what = int(args.one[0]), args.one[1]
    args.work_dir.mkdir(parents=True, exist_ok=True)
    if what == "export":
        res = export_stage(args.work_dir, n_docs, data_spec(args), args.regenerate, args.result,
                           args.sample_interval)
    else:
        res = engine_stages(args.work_dir, n_docs, what, args.result, key=run_key(args, n_docs, what), k=args.k,
                            threads=args.threads, interval=args.sample_interval, keep_index=args.keep_indexes)
    return all(s.get("status") == "ok" for s in res["stages"])



def child_exit(args: argparse.Namespace) -> NoReturn:
    """The child process's whole life: :func:`run_one`, then exit at once with status 0 (every stage ok) or 3. The
    monitor thread may be attached to the JVM: it leaves without interpreter/JVM teardown."""
    ok = run_one(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if ok else 3)


@dataclass
class ScaleCurve:
    """One invocation's outcome: the prepared output folder, the manifest's experiment, every (size, engine)
    result, the table rows, fits, exact-engine checks, what was skipped or failed, and ``results.json``."""

    out: Path
    experiment: dict[str, Any]
    results: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    fit: dict[str, Any]
    exact: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    failed: list[dict[str, Any]]
    document: dict[str, Any]

    def manifest_fields(self) -> dict[str, Any]:
        """What the manifest records beside the experiment: per run its stages' status and seconds, the skipped,
        the failed, and whether the exact engines agreed."""
        return {"counts": {f"{r['docs']}/{r['engine']}": {s["stage"]: s["status"] for s in r["stages"]}
                           for r in self.results},
                "timings": {f"{r['docs']}/{r['engine']}/{s['stage']}": s.get("seconds")
                            for r in self.results for s in r["stages"]},
                "skipped": self.skipped, "failed": self.failed,
                "exact_engines_identical": all(c["identical"] for c in self.exact)}


def run_curve(args: argparse.Namespace, command: Sequence[str]) -> ScaleCurve:
    """Every size x engine of the options of :func:`parse_args`, each in a fresh process of ``command`` (the
    script's own command line) with ``--one``; the output folder is prepared, nothing written in it yet."""
    from lsr_eval.manifest import prepare_output

    spec = data_spec(args)
    experiment = {"benchmark": STAGE, "sizes": args.sizes, "engines": args.engines, "queries": args.queries,
                  "k": args.k, "threads": args.threads, "data": asdict(spec), "budget_minutes": args.budget_minutes,
                  "mem_fraction": args.mem_fraction, "force": args.force, "reuse_runs": args.reuse_runs,
                  "session_budget_minutes": args.session_budget_minutes}
    out = prepare_output(args.out, experiment, overwrite=args.overwrite)
    runs = args.work_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    load_start = list(os.getloadavg())
    loop = _Loop(args, command, runs, t_start, history={e: [] for e in args.engines})
    for n_docs in args.sizes:
        if loop.run_export(n_docs):
            for engine in args.engines:
                loop.run_engine(n_docs, engine)
    results, skipped = loop.results, loop.skipped
    rows = table_rows(results, args.queries)
    fit = fits(results)
    failed = [{"docs": r["docs"], "engine": r["engine"], "stage": s["stage"], "status": s["status"],
               "why": s.get("note") or s.get("error")}
              for r in results for s in r["stages"] if s["status"] not in ("ok", "skipped")]
    exact = compare_exact(results)
    results_doc = _results_document(args, results, rows, fit, exact, skipped, failed, load_start, t_start)
    return ScaleCurve(out=out, experiment=experiment, results=results, rows=rows, fit=fit, exact=exact,
                      skipped=skipped, failed=failed, document=results_doc)


@dataclass
class _Loop:
    """The sizes x engines loop of :func:`run_curve`: how it starts children, and the results, skips and
    per-engine history (the basis of the predictions) gathered so far."""

    args: argparse.Namespace
    command: Sequence[str]
    runs: Path
    t_start: float
    history: dict[str, list[dict]]
    results: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def child(self, n_docs: int, what: str, rpath: Path) -> tuple[dict | None, str | None]:
        """One child (``what``: ``export`` or an engine) writing ``rpath``: (its result file, a problem or None)."""
        return run_child(self.command, child_argv(self.args, n_docs, what, rpath), rpath,
                         self.args.timeout_minutes * 60, self.runs / "children.log")

    def run_export(self, n_docs: int) -> bool:
        """The export of one size; when it failed, every engine of the size recorded skipped. Whether it is ok."""
        log.info("=== %d documents: export", n_docs)
        rpath = self.runs / f"{n_docs}-export.json"
        res, problem = self.child(n_docs, "export", rpath)
        res = close_result(res, n_docs, SHARED, problem)
        self.results.append(res)
        if res["stages"][0]["status"] == "ok":
            return True
        rec = res["stages"][0]
        why = f"export of {n_docs} documents failed: {rec.get('note') or rec.get('error')}"
        for engine in self.args.engines:
            self.results.append(skipped_result(n_docs, engine, why, STAGES[1:]))
            self.skipped.append({"docs": n_docs, "engine": engine, "why": why})
        return False

    def run_engine(self, n_docs: int, engine: str) -> None:
        """One engine at one size: skipped when predicted over a budget, else reused (``--reuse-runs``) or run in
        a child; its result recorded and added to the engine's history."""
        args = self.args
        mem = available_memory_mb()
        prediction = predict(self.history[engine], n_docs)
        why = self.skip_reason(prediction, mem)
        if why:
            log.warning("%s at %d documents skipped: %s", engine, n_docs, why)
            self.results.append(skipped_result(n_docs, engine, why, STAGES[1:]))
            self.skipped.append({"docs": n_docs, "engine": engine, "why": why, "prediction": prediction})
            return
        log.info("=== %d documents: %s%s", n_docs, engine,
                 f" (predicted {prediction['seconds'] / 60:.1f} min, {prediction['rss_peak_mb']:.0f} MB)"
                 if prediction else "")
        rpath = self.runs / f"{n_docs}-{engine}.json"
        old = reusable(rpath, run_key(args, n_docs, engine)) if args.reuse_runs else None
        if old is not None:
            res = _reused(old, engine, n_docs)
        else:
            res, problem = self.child(n_docs, engine, rpath)
            res = close_result(res, n_docs, engine, problem)
            if problem:
                res["problem"] = problem
        res["prediction"] = prediction
        self.results.append(res)
        _log_stages(res, engine, n_docs)
        self.history[engine].append(res)

    def skip_reason(self, prediction: dict[str, Any] | None, mem: float | None) -> str | None:
        """Why a run with this prediction is skipped (per-run time and memory budgets, then what is left of
        ``--session-budget-minutes``); None: run it."""
        args = self.args
        why = budget_decision(prediction, args.budget_minutes * 60,
                              mem * args.mem_fraction if mem else None, args.force)
        if not why and prediction and args.session_budget_minutes is not None and not args.force:
            left = args.session_budget_minutes * 60 - (time.perf_counter() - self.t_start)
            if prediction["seconds"] > left:
                why = (f"predicted {prediction['seconds'] / 60:.1f} min (linear from {prediction['from_docs']} "
                       f"docs) > {max(left, 0) / 60:.1f} min left of --session-budget-minutes "
                       f"{args.session_budget_minutes:g}")
        return why


def _reused(old: dict[str, Any], engine: str, n_docs: int) -> dict[str, Any]:
    """A stored run taken as this run's result (``--reuse-runs``), marked reused in itself and its stages."""
    log.info("reusing the %s run at %d documents of %s (--reuse-runs)", engine, n_docs, old.get("finished"))
    old["reused"] = True
    for rec in old["stages"]:
        rec["note"] = f"reused run finished {old.get('finished')}"
    return old


def _log_stages(res: Mapping[str, Any], engine: str, n_docs: int) -> None:
    """One log line per stage of a run: status, seconds and memory peaks."""
    for rec in res["stages"]:
        log.info("%s %d %s: %s %.2fs, RSS peak %s MB%s", engine, n_docs, rec["stage"], rec["status"],
                 rec.get("seconds") or 0.0, rec.get("rss_peak_mb"),
                 f", heap peak {rec['heap_peak_mb']} MB" if rec.get("heap_peak_mb") is not None else "")


def _results_document(args: argparse.Namespace, results: list[dict[str, Any]], rows: list[dict[str, Any]],
                      fit: dict[str, Any], exact: list[dict[str, Any]], skipped: list[dict[str, Any]],
                      failed: list[dict[str, Any]], load_start: list[float], t_start: float) -> dict[str, Any]:
    """The content of ``results.json``: the runs and what was drawn from them, and the protocol they followed."""
    collections = {r["docs"]: r.get("collection") for r in results if r["engine"] == SHARED}
    linear = {k: e["seconds"]["loglog_exponent"] for k, e in fit.items() if "seconds" in e}
    return {
        "target_documents": MSMARCO_PASSAGES, "sizes": args.sizes, "engines": args.engines,
        "collections": collections, "rows": rows, "runs": results, "fits": fit, "loglog_exponents": linear,
        "exact_engines": exact,
        "skipped": skipped, "failed": failed,
        "protocol": _protocol(args, load_start),
        "seconds": round(time.perf_counter() - t_start, 1),
    }


def _protocol(args: argparse.Namespace, load_start: list[float]) -> dict[str, Any]:
    """How the runs were made and measured, with the settings and machine load that bear on the figures."""
    return {
        "process": "each (size, engine) and each export in a fresh subprocess",
        "stages": {"export": "generate the synthetic vectors and write the JsonVectorCollection, queries, qrels "
                             "(shared by the engines)",
                   "index": "Engine.build(collection, index, threads)",
                   "search": "Engine.open + batch_search(queries, k, threads) + close",
                   "evaluate": "lsr_eval.evaluation.evaluate(qrels, run), default measures"},
        "rss": "process resident set: VmHWM reset at each stage start plus samples (JVM included for anserini)",
        "heap": "JVM heap in use, sampled (Runtime total - free, MemoryMXBean used)",
        "fit": "least squares value = a + b * docs over the sizes run; marginal = slope of the two largest "
               "sizes; loglog_exponent 1 = linear; per_doc_ratio = (value/docs at largest) / (at smallest); "
               "cpu_seconds: the process's CPU time (all its threads, JVM and native included), less sensitive "
               "than wall time to other jobs on a shared machine (load_1min is recorded per row)",
        "k": args.k, "threads": args.threads, "budget_minutes": args.budget_minutes,
        "mem_fraction": args.mem_fraction, "timeout_minutes": args.timeout_minutes,
        "load_average_start": load_start, "load_average_end": list(os.getloadavg()),
        "cpu_cores": os.cpu_count()}
