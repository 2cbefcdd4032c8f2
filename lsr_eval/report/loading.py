"""Reading a results folder, as the benchmark and training commands write it.

Design notes: docs/design.md."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from lsr_eval.benchmark.row import TABLE_RECORDS
from lsr_eval.data.datasets import jsonl_object
from lsr_eval.errors import InputError
from lsr_eval.evaluation.measures import find_measure
from lsr_eval.manifest import MANIFEST, load_json, read_json_object, read_manifest
from lsr_eval.settings import check

TABLE_JSON = "table.json"
TABLE_CSV = "table.csv"
#: Sub-folder of a results folder holding benchmark folders (``results/benchmarks/<name>/``).
BENCHMARKS_DIR = "benchmarks"
TRAIN_LOG = "log.jsonl"
TRAIN_DIR = "train"

#: Efficiency columns a benchmark table may hold (numbers; ``latency_parallel_*``: a fusion's parts in parallel).
EFFICIENCY_COLUMNS = ("flops", "avg_q_dims", "avg_d_dims", "latency_mean_ms", "latency_p50_ms", "latency_p99_ms",
                      "index_bytes", "postings", "postings_per_query", "latency_encode_p50_ms",
                      "latency_search_p50_ms", "latency_parallel_mean_ms", "latency_parallel_p50_ms",
                      "latency_parallel_p99_ms", "latency_search_mean_ms", "latency_search_p99_ms",
                      "latency_encode_mean_ms", "latency_ratio_bm25",
                      "latency_search_ratio_bm25", "query_encoder_gflop")
#: A sweep point's settings (numbers).
SWEEP_COLUMNS = ("doc_top_k", "doc_threshold", "query_top_k", "query_threshold")
#: Text columns of a benchmark table (``kind``: bm25, splade, fusion or run; ``sweep``/``point``: a sweep point's
#: sweep and label; ``engine``: the retrieval engine, when the table names one; ``precision``: the resolved precision
#: of a model row, "fp32" or "bf16"; ``declared_costs``: comma-separated cost columns a run file's source declared,
#: ``cost_source``: that source; ``significance_test``, ``significance_correction``: the test behind the markers and
#: its correction for multiple comparisons, from the manifest).
TEXT_COLUMNS = ("dataset", "system", "model", "status", "baseline", "kind", "sweep", "point", "engine",
                "latency_rule", "precision", "declared_costs", "cost_source", "efficiency_status",
                "significance_test", "significance_correction", "latency_reference")
#: Counts a row may carry (``judged_without_results``: judged queries the run has no result for, scored 0).
COUNT_COLUMNS = ("judged_without_results",)
REQUIRED_COLUMNS = ("dataset", "system")
SIG_SUFFIX = "_sig"
#: Suffix of a measure's corrected p-value against the baseline (``nDCG@10_p``): a number where the row was tested.
P_SUFFIX = "_p"
#: Cell values read as "no value".
_EMPTY = {"", "nan", "NaN", "null", "None", "NA", "N/A"}

#: Manifest keys holding a training run's rescaling k and backbone, in order of preference.
K_KEYS = ("rescale_k", "head_rescale_k", "k")
BACKBONE_KEYS = ("backbone", "model_name_or_path", "model_name", "model", "base_model")
#: The ``rescale_rule`` a training manifest records when no k was set (the run has no rescaling k).
NOT_RESCALED = "none"
#: A run's evaluation on its dev split (model selection), relative to the run folder.
DEV_METRICS = Path("dev") / "metrics.json"
#: inspect-head diagnoses kept with a run, relative to the run folder.
DIAGNOSES_GLOB = "inspect-head/*/diagnosis.json"
#: ``tied_input`` values that change what a k means (the encoder input is not divided with the tied head): a run
#: with one is labelled ``<backbone> (input <value>)``, so that it is not taken for the divided run of the same k.
LABELLED_TIED_INPUT = ("compensated",)


def is_measure(column: Any) -> bool:
    """Whether ``column`` is a canonical measure name (``nDCG@10``, ``R@1000(rel=2)``, ``MAP``; see
    :mod:`lsr_eval.evaluation.measures`)."""
    if not isinstance(column, str):
        return False
    measure = find_measure(column)
    return measure is not None and measure.name == column


def measure_columns(columns: Iterable[Any]) -> list[str]:
    """The columns named by canonical measure names, in order."""
    return [c for c in columns if is_measure(c)]


def is_p_column(column: Any) -> bool:
    """Whether ``column`` is a measure's p-value column (``nDCG@10_p``)."""
    return isinstance(column, str) and column.endswith(P_SUFFIX) and is_measure(column[: -len(P_SUFFIX)])


def _number(value: Any, where: str) -> float:
    """A cell as a float: None and the texts of :data:`_EMPTY` are NaN; anything else not a number raises."""
    if value is None:
        return math.nan
    if isinstance(value, bool):
        raise InputError(f"{where}: expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    if text in _EMPTY:
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{where}: expected a number, got {value!r}") from None


def text_of(value: Any) -> str:
    """A cell as stripped text: "" for None and NaN (what an empty CSV or JSON cell reads as)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def _read_records(path: Path) -> tuple[list[dict[str, Any]], str]:
    """Rows of ``table.json`` (a JSON list of objects) or ``table.csv`` (all cells as text), and how a row is
    named in messages ("record" or "line")."""
    if path.suffix == ".json":
        data = load_json(path)
        return check("the table", data, list[dict], TABLE_RECORDS, str(path)), "record"
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not a readable CSV table ({e})") from None
    return frame.to_dict(orient="records"), "line"


def normalise_table(records: list[dict[str, Any]], source: str, row_word: str = "record") -> pd.DataFrame:
    """A benchmark table from its rows, typed as docs/design.md says; errors name ``source`` and the row
    (records count from 1, CSV lines count the header as line 1)."""
    columns: list[str] = []
    for r in records:
        columns.extend(c for c in r if c not in columns)
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if records and missing:
        raise InputError(f"{source}: missing column(s) {', '.join(missing)}; has {', '.join(map(str, columns))}")
    offset = 2 if row_word == "line" else 1
    numeric = [c for c in columns if c == "k" or c in EFFICIENCY_COLUMNS or c in SWEEP_COLUMNS or c in COUNT_COLUMNS
               or c == "significance_alpha" or c in measure_columns(columns) or is_p_column(c)]
    rows = []
    for i, r in enumerate(records):
        where = f"{source} {row_word} {i + offset}"
        row: dict[str, Any] = {}
        for c in columns:
            v = r.get(c)
            if c in numeric:
                row[c] = _number(v, f"{where} column {c!r}")
            elif c in TEXT_COLUMNS or str(c).endswith(SIG_SUFFIX):
                row[c] = text_of(v)
            else:
                row[c] = v
        for c in REQUIRED_COLUMNS:
            if not row[c]:
                raise InputError(f"{where}: empty {c!r}")
        if "status" in row and not row["status"]:
            row["status"] = "unknown"
        rows.append(row)
    frame = pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame(columns=list(REQUIRED_COLUMNS))
    for c, default in (("model", ""), ("status", "ok"), ("baseline", "")):
        if c not in frame.columns:
            frame[c] = default
    if "k" not in frame.columns:
        frame["k"] = math.nan
    for c in numeric + ["k"]:
        frame[c] = frame[c].astype("float64")
    dup = frame.duplicated(["dataset", "system"], keep=False)
    if dup.any():
        where = ", ".join(f"{row_word} {i + offset} ({frame.at[i, 'dataset']}, {frame.at[i, 'system']})"
                          for i in frame.index[dup][:6])
        raise InputError(f"{source}: repeated (dataset, system) rows: {where}")
    return frame


@dataclass
class BenchmarkResults:
    """One benchmark folder: its normalised table, the file it came from and its manifest."""

    name: str
    path: Path
    source: Path
    table: pd.DataFrame
    manifest: dict[str, Any] | None

    @property
    def measures(self) -> list[str]:
        return measure_columns(self.table.columns)

    @property
    def datasets(self) -> list[str]:
        return list(dict.fromkeys(self.table["dataset"]))

    @property
    def systems(self) -> list[str]:
        return list(dict.fromkeys(self.table["system"]))


def load_benchmark(folder: str | Path, name: str | None = None) -> BenchmarkResults:
    """Read ``folder/table.json`` (preferred: it keeps types) or ``folder/table.csv``, and ``manifest.json``."""
    folder = Path(folder)
    source = folder / TABLE_JSON if (folder / TABLE_JSON).exists() else folder / TABLE_CSV
    if not source.exists():
        raise InputError(f"{folder}: no {TABLE_JSON} or {TABLE_CSV}")
    records, row_word = _read_records(source)
    table = normalise_table(records, str(source), row_word)
    manifest = read_manifest(folder)
    return BenchmarkResults(name or folder.name, folder, source, with_significance(table, manifest), manifest)


def with_significance(table: pd.DataFrame, manifest: dict[str, Any] | None) -> pd.DataFrame:
    """``table`` with the test and level of its significance markers (``significance_test``,
    ``significance_alpha``) from the manifest's ``config.significance`` where the table does not say; unchanged
    when the manifest records none."""
    config = ((manifest or {}).get("config") or {}).get("significance") if isinstance(manifest, dict) else None
    if not isinstance(config, dict) or not config.get("test"):
        return table
    table = table.copy()
    if "significance_test" not in table.columns:
        table["significance_test"] = str(config["test"])
    if "significance_alpha" not in table.columns and config.get("alpha") is not None:
        table["significance_alpha"] = float(config["alpha"])
    if "significance_correction" not in table.columns and config.get("correction"):
        table["significance_correction"] = str(config["correction"])
    return table


def find_key(doc: Any, keys: Iterable[str], accept) -> Any:
    """The first value under one of ``keys`` (in order) that ``accept`` takes, searching ``doc``'s ``experiment``
    first, then the whole document, each breadth-first (nested dicts such as ``config`` included); None when none.
    Shallow keys win over deep ones, so ``experiment.rescale_k`` beats a ``k`` nested deeper."""
    keys = tuple(keys)
    roots = [doc.get("experiment"), doc] if isinstance(doc, dict) else []
    for root in roots:
        queue = [root]
        while queue:
            node = queue.pop(0)
            if not isinstance(node, dict):
                continue
            for key in keys:
                if key in node and accept(node[key]):
                    return node[key]
            queue.extend(v for v in node.values() if isinstance(v, dict))
    return None


def _is_k(value: Any) -> bool:
    try:
        return not isinstance(value, bool) and math.isfinite(float(value)) and float(value) > 0
    except (TypeError, ValueError):
        return False


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


@dataclass
class TrainingRun:
    """One training run: its log (one row per step, sorted by step), manifest, backbone and rescaling k.

    ``replaced_steps`` counts log lines whose step a later line logged again (a resumed run): the later one is
    kept. ``blank_lines`` counts empty lines skipped.
    """

    name: str
    path: Path
    log: pd.DataFrame
    manifest: dict[str, Any] | None
    backbone: str | None
    k: float | None
    lines: int = 0
    blank_lines: int = 0
    replaced_steps: int = 0
    notes: list[str] = field(default_factory=list)
    dev: dict[str, float] = field(default_factory=dict)  #: :data:`DEV_METRICS`: measure -> value on the dev split


def read_log(path: Path) -> tuple[pd.DataFrame, int, int, int]:
    """``log.jsonl`` as a frame sorted by ``step`` (a record without ``step`` gets its position among the
    records, from 0), the last line kept for a repeated step; returns (frame, lines read, blank lines, replaced
    steps)."""
    records = []
    lines = blank = 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            lines += 1
            rec = jsonl_object(raw, path, n)
            if rec is None:
                blank += 1
                continue
            rec.setdefault("step", len(records))
            if not _is_number(rec["step"]):
                raise InputError(f"{path}:{n}: step {rec['step']!r} is not a number")
            records.append(rec)
    frame = pd.DataFrame(records)
    if frame.empty:
        return pd.DataFrame({"step": pd.Series(dtype="float64")}), lines, blank, 0
    before = len(frame)
    frame = frame.drop_duplicates("step", keep="last").sort_values("step", kind="stable").reset_index(drop=True)
    return frame, lines, blank, before - len(frame)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_training_run(folder: str | Path) -> TrainingRun:
    """Read ``folder/log.jsonl`` and ``folder/manifest.json``; backbone and k come from the manifest
    (:data:`BACKBONE_KEYS`, :data:`K_KEYS`, see :func:`find_key`); a run whose manifest says ``rescale_rule: none``
    has no k."""
    folder = Path(folder)
    log, lines, blank, replaced = read_log(folder / TRAIN_LOG)
    manifest = read_manifest(folder)
    notes = []
    k = find_key(manifest, K_KEYS, _is_k) if manifest else None
    backbone = find_key(manifest, BACKBONE_KEYS, _is_name) if manifest else None
    if manifest is None:
        notes.append(f"{folder.name}: no {MANIFEST}, backbone and k unknown")
    else:
        if find_key(manifest, ("rescale_rule",), _is_name) == NOT_RESCALED:
            k = None  # the head was not rescaled: the run is not a point of a k study (its "k = 1" is a default)
        elif k is None:
            notes.append(f"{folder.name}: no rescaling k in {MANIFEST} (keys {', '.join(K_KEYS)})")
        if backbone is None:
            notes.append(f"{folder.name}: no backbone in {MANIFEST} (keys {', '.join(BACKBONE_KEYS)})")
        tied = find_key(manifest, ("tied_input",), _is_name)
        if backbone is not None and tied in LABELLED_TIED_INPUT:
            backbone = f"{backbone} (input {tied})"
    return TrainingRun(folder.name, folder, log, manifest, backbone, float(k) if k is not None else None,
                       lines, blank, replaced, notes, read_dev_metrics(folder / DEV_METRICS))


def read_dev_metrics(path: Path) -> dict[str, float]:
    """``{measure: value}`` of a run's dev evaluation (:data:`DEV_METRICS`), {} when absent; a value that is not a
    number, or a key that is not a measure name, raises with the file."""
    doc = read_json_object(path)
    if doc is None:
        return {}
    bad = [k for k, v in doc.items() if not is_measure(k) or not _is_number(v)]
    if bad:
        raise InputError(f"{path}: expected {{measure: number}}; not a measure with a number: {', '.join(bad)}")
    return {k: float(v) for k, v in doc.items()}


@dataclass(frozen=True)
class HeadDiagnosis:
    """One ``lsr-eval inspect-head`` diagnosis: the head as loaded (k = 1) and the k its rule suggests."""

    label: str              #: ``<run>/<folder>``
    model: str
    tied_input: str | None  #: from its manifest: how the suggestion treated a tied input
    head_norm: float        #: Frobenius norm of the decoder weight at k = 1
    mean_max_logit: float   #: at k = 1
    mean_score: float       #: at k = 1: the cross-text score, mean dot product between different texts
    active_fraction: float  #: at k = 1
    suggested_k: float
    rule: str


def load_diagnosis(path: Path, label: str) -> HeadDiagnosis:
    """Read one ``diagnosis.json`` (and the ``manifest.json`` beside it, for ``tied_input``)."""
    doc = read_json_object(path)
    rows = [r for r in (doc or {}).get("rows", []) if isinstance(r, dict) and r.get("k") == 1]
    if doc is None or not rows or not _is_number(doc.get("suggested_k")):
        raise InputError(f"{path}: expected an inspect-head diagnosis (rows with k = 1, suggested_k)")
    manifest = read_manifest(path.parent) or {}
    tied = find_key(manifest, ("tied_input",), _is_name)
    row = rows[0]
    try:
        return HeadDiagnosis(label, str(doc.get("model", "")), tied, float(row["frobenius"]),
                             float(row["mean_max_logit"]), float(row["mean_score"]), float(row["active_fraction"]),
                             float(doc["suggested_k"]), str(doc.get("rule", "")))
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: the k = 1 row lacks a number ({e})") from None


@dataclass
class Results:
    """A results folder: its benchmarks and training runs, by folder name."""

    root: Path
    benchmarks: dict[str, BenchmarkResults]
    training: dict[str, TrainingRun]
    diagnoses: dict[str, HeadDiagnosis] = field(default_factory=dict)  #: by label (``<run>/<folder>``)

    def combined(self) -> pd.DataFrame:
        """All benchmark rows in one table (see :func:`combine`)."""
        return combine(self.benchmarks.values())


def _same_numbers(a: pd.Series, b: pd.Series, columns: list[str]) -> bool:
    """Whether two rows agree on every column both have a number in (``k`` included)."""
    for c in columns:
        x, y = a.get(c, math.nan), b.get(c, math.nan)
        if not (math.isnan(x) or math.isnan(y)) and x != y:
            return False
    return True


def combine(benchmarks: Iterable[BenchmarkResults]) -> pd.DataFrame:
    """The rows of several benchmarks with a ``benchmark`` column.

    A (dataset, system) found in more than one benchmark gives one row: the "ok" row with the most efficiency
    values (the first of those; else the first row), its empty cells filled from the other "ok" rows, which must
    agree with it on ``k`` and every measure; ``attrs["merged"]`` says which rows were merged away. Two "ok" rows
    whose effectiveness differs are different systems under one name (``rrf`` of other runs): each is kept, named
    ``<system> (<benchmark>)``, and the note says so. Efficiency
    (latency above all) is measured anew by each benchmark, so it may differ: the kept row's values are used and
    the note says so.
    """
    frames = [b.table.assign(benchmark=b.name, _source=str(b.source)) for b in benchmarks]
    if not frames:
        empty = pd.DataFrame(columns=[*REQUIRED_COLUMNS, "model", "status", "baseline", "benchmark"])
        return empty.assign(k=pd.Series(dtype="float64"))
    frame = pd.concat(frames, ignore_index=True)
    measures = ["k"] + [c for c in frame.columns if c in SWEEP_COLUMNS or c in measure_columns(frame.columns)]
    efficiency = [c for c in frame.columns if c in EFFICIENCY_COLUMNS]
    counts = [c for c in frame.columns if c in COUNT_COLUMNS or c == "significance_alpha" or is_p_column(c)]
    numbers = measures + efficiency + counts
    texts = [c for c in frame.columns if c in TEXT_COLUMNS or str(c).endswith(SIG_SUFFIX)]
    for c in numbers:
        frame[c] = frame[c].astype("float64")
    for c in frame.columns:
        if c in TEXT_COLUMNS or str(c).endswith(SIG_SUFFIX):
            frame[c] = frame[c].fillna("")  # a column only some benchmarks have
    groups: dict[tuple[str, str], list[int]] = {}
    for i in frame.index:
        groups.setdefault((frame.at[i, "dataset"], frame.at[i, "system"]), []).append(i)
    merged, kept, renamed = [], [], []
    for (dataset, system), rows in groups.items():
        ok = [i for i in rows if frame.at[i, "status"] == "ok"]
        clusters: list[list[int]] = []  # ok rows that agree on k and every measure: one system
        for i in ok:
            home = next((c for c in clusters if _same_numbers(frame.loc[c[0]], frame.loc[i], measures)), None)
            if home is None:
                clusters.append([i])
            else:
                home.append(i)
        if not clusters:
            clusters = [rows[:1]]
        clusters[0] += [i for i in rows if i not in ok and i != clusters[0][0]]
        for cluster in clusters:
            ranked = sorted((i for i in cluster if i in ok), key=lambda i: -int(frame.loc[i, efficiency].notna().sum())
                            if efficiency else 0) or cluster
            first = ranked[0]
            differs = []
            for i in ranked[1:]:
                if not _same_numbers(frame.loc[first], frame.loc[i], efficiency):
                    differs.append(frame.at[i, "benchmark"])
                for c in numbers + [c for c in texts if c not in ("dataset", "system", "status")]:
                    empty = frame.at[first, c] == "" if c in texts else math.isnan(frame.at[first, c])
                    if empty:
                        frame.at[first, c] = frame.at[i, c]
            if len(clusters) > 1:  # one name, different systems: each named by its benchmark
                frame.at[first, "system"] = f"{system} ({frame.at[first, 'benchmark']})"
                renamed.append(f"({dataset}, {system}) differs between "
                               f"{', '.join(str(frame.at[c[0], '_source']) for c in clusters)}: different systems "
                               f"under one name, shown as {system} (<benchmark>)")
            kept.append(first)
            merged += [f"({dataset}, {system}) of {frame.at[i, 'benchmark']} merged into the row of "
                       f"{frame.at[first, 'benchmark']}"
                       + (" (efficiency measured again there; kept the values of the row with most of them)"
                          if frame.at[i, "benchmark"] in differs else "") for i in cluster if i != first]
    out = frame.loc[sorted(kept)].drop(columns="_source").reset_index(drop=True)
    out.attrs["merged"] = list(dict.fromkeys(renamed)) + merged
    return out


def is_benchmark(folder: Path) -> bool:
    """A folder with a table whose manifest, when it has one, was written by ``lsr-eval benchmark`` (the tables of
    other benchmarks scripts, e.g. ``results/scale``, have other columns)."""
    if not ((folder / TABLE_JSON).is_file() or (folder / TABLE_CSV).is_file()):
        return False
    manifest = read_manifest(folder)
    return manifest is None or manifest.get("stage", "benchmark") == "benchmark"


def load_results(root: str | Path) -> Results:
    """Every benchmark folder directly under ``root`` or under ``root/benchmarks`` (where ``lsr-eval benchmark``
    configs put them), or ``root`` itself when it holds a table, and every training run under ``root/train``;
    raises when there is neither."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"results folder {root} does not exist")
    folders = [root] if is_benchmark(root) else []
    for parent in (root, root / BENCHMARKS_DIR):
        if parent.is_dir():
            folders += sorted(p for p in parent.iterdir() if p.is_dir() and p.name != TRAIN_DIR and is_benchmark(p))
    benchmarks = {f.name: load_benchmark(f) for f in folders}
    train = root / TRAIN_DIR
    runs = sorted(p for p in train.iterdir() if (p / TRAIN_LOG).is_file()) if train.is_dir() else []
    training = {p.name: load_training_run(p) for p in runs}
    if not benchmarks and not training:
        raise InputError(f"{root}: no benchmark folder (<name>/{TABLE_JSON} or {TABLE_CSV}) and no training run "
                         f"({TRAIN_DIR}/<run>/{TRAIN_LOG})")
    diagnoses = {}
    for run in runs:
        for path in sorted(run.glob(DIAGNOSES_GLOB)):
            label = f"{run.name}/{path.parent.name}"
            diagnoses[label] = load_diagnosis(path, label)
    return Results(root, benchmarks, training, diagnoses)

