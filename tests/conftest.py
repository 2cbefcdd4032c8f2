"""Shared fixtures: the real data in ``../shared/data`` and small corpora written on the fly."""

from __future__ import annotations

import importlib.abc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import scheduling

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LSR_EVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


def run_script(path: str, argv: list[str]) -> int:
    """The script at ``path`` (relative to the checkout, e.g. ``studies/gpu_check/run.py``) run as a user runs it (a
    subprocess of this Python, output shown): its exit status. Tests call scripts this way and never import them."""
    return subprocess.run([sys.executable, str(REPO / path), *argv], check=False).returncode


def load_script(path: str, name: str):
    """The study script at ``path`` (relative to the checkout) as the module ``name``, loaded once: for the tests
    that check a study's own rules on hand-made inputs (a folder of scripts, not a package)."""
    import importlib.util

    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module          # dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]


#: The suite's JVMs each run seconds of Anserini: the serial collector, and C2 compiling only methods 4-10x hotter
#: than its defaults ask, spend less CPU on them (SciFact's BM25 index, search and impact index: 34 -> 28 CPU-s).
#: Results do not depend on either (Java's float arithmetic is strict), only the time they take.
TEST_JVM_OPTIONS = ("-XX:+UseSerialGC -XX:Tier4InvocationThreshold=50000 -XX:Tier4CompileThreshold=60000 "
                    "-XX:Tier4BackEdgeThreshold=400000")


#: Where :func:`pytest_configure` put this process's ir_datasets cache.
_IRDS_HOME = pytest.StashKey[Path]()


def pytest_configure(config):
    """Point ir_datasets at a private cache seeded from ../shared before anything imports it (``import ranx``
    imports ir_datasets, which fixes its home folder at import time). Under several pytest-xdist workers, torch's
    OpenMP and numba run one thread per worker (subprocesses inherit it): the workers already fill the cores, and
    more threads only spin on each other. A test that needs more threads sets them itself. The JVMs run with
    :data:`TEST_JVM_OPTIONS` (subprocesses too)."""
    import tempfile

    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    os.environ.setdefault("LSR_EVAL_JVM_OPTIONS", TEST_JVM_OPTIONS)

    # CUDA absent unless a test simulates it (simulate_cuda), on a GPU host too and in every subprocess
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    home = Path(tempfile.mkdtemp(prefix="lsr-eval-irds-"))
    config.stash[_IRDS_HOME] = home
    os.environ["IR_DATASETS_HOME"] = str(home)
    if (SHARED / "ir_datasets").is_dir():
        from lsr_eval.data.irds_cache import seed_cache

        seed_cache(SHARED / "ir_datasets", home)


def pytest_unconfigure(config):
    """Remove the process's ir_datasets cache (:func:`pytest_configure`)."""
    import shutil

    home = config.stash.get(_IRDS_HOME, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


#: The CPUs a ``precision_sensitive`` test runs on, both simulated from this machine's flags: without native bf16
#: (avx512_bf16 and amx_bf16 removed) and with it (added). Every other test runs on the first, so that the real CPU
#: decides nothing: a default that depends on the CPU is checked both ways on any host.
SIMULATED_CPUS = ("no-bf16-cpu", "bf16-cpu")
#: The flags a native-bf16 CPU reports (AVX-512 BF16 / AMX servers).
BF16_CPU_FLAGS = frozenset({"avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})


def pytest_generate_tests(metafunc):
    """Tests marked ``precision_sensitive`` run once per entry of :data:`SIMULATED_CPUS`."""
    if metafunc.definition.get_closest_marker("precision_sensitive") and "cpu_kind" in metafunc.fixturenames:
        metafunc.parametrize("cpu_kind", SIMULATED_CPUS, indirect=True)


def simulate_cpu(monkeypatch, bf16: bool) -> frozenset[str]:
    """Make :func:`lsr_eval.hardware.cpu_flags` report this CPU with native bf16 (``bf16=True``) or without it;
    a file named explicitly is still read."""
    from lsr_eval import hardware

    real = hardware.cpu_flags
    host = real()
    flags = frozenset(host | BF16_CPU_FLAGS) if bf16 else frozenset(host - set(hardware.CPU_BF16_FLAGS))

    def simulated(path: Path = hardware.CPUINFO) -> frozenset[str]:
        return flags if path == hardware.CPUINFO else real(path)

    monkeypatch.setattr(hardware, "cpu_flags", simulated)
    return flags


def simulate_bf16_cpu(monkeypatch) -> frozenset[str]:
    """A CPU with native bf16 (:func:`simulate_cpu` with ``bf16=True``)."""
    return simulate_cpu(monkeypatch, bf16=True)


def simulate_cuda(monkeypatch, bf16: bool = True, count: int = 1) -> None:
    """Make torch report ``count`` CUDA devices (nothing can run on them: for device and precision resolution)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: "Simulated GPU")


@pytest.fixture(autouse=True)
def cpu_kind(request, monkeypatch) -> str:
    """``no-bf16-cpu`` for every test, or ``bf16-cpu`` for the second run of a ``precision_sensitive`` one (see
    :data:`SIMULATED_CPUS`)."""
    kind = getattr(request, "param", "no-bf16-cpu")
    simulate_cpu(monkeypatch, bf16=kind == "bf16-cpu")
    return kind


#: ``LSR_EVAL_TIER=unit`` (``make test-fast``): a test that starts the JVM or reads ``../shared`` fails. A test under
#: ``tests/unit/`` is held to that in the full suite too.
UNIT_TIER = os.environ.get("LSR_EVAL_TIER") == "unit"
#: The unit tier's folder: its tests mirror the package (``tests/unit/<package>/``), package-wide ones at its top.
UNIT_TESTS = Path(__file__).resolve().parent / "unit"
_IN_UNIT_TEST = [False]
#: Packages a unit test does not import: ranx's numba kernels compile for minutes on a fresh machine (its fusions
#: and ranx parity are integration tests; the native fusions and evaluation run without it).
UNIT_REFUSED_IMPORTS = frozenset({"ranx"})


class _UnitTierImports(importlib.abc.MetaPathFinder):
    """Refuses :data:`UNIT_REFUSED_IMPORTS` inside a unit test (where no earlier test imported them already, as in
    ``make test-fast``)."""

    def find_spec(self, name, path, target=None):
        if _IN_UNIT_TEST[0] and name.partition(".")[0] in UNIT_REFUSED_IMPORTS:
            raise ImportError(f"a unit test (tests/unit/) imports no {name} (its numba kernels compile for minutes on "
                              "a fresh machine): move this test to tests/integration/")
        return None


sys.meta_path.insert(0, _UnitTierImports())


@pytest.fixture(autouse=True)
def _unit_tier_guard(request, monkeypatch):
    """A test of the unit tier (``tests/unit/``, or any under ``LSR_EVAL_TIER=unit``) fails if it starts the JVM or
    reads ``../shared``: it belongs in ``tests/integration/``."""
    unit = UNIT_TIER or UNIT_TESTS in request.node.path.parents
    if unit:
        from lsr_eval.anserini import jvm

        def refuse():
            raise RuntimeError("a unit test (tests/unit/) starts no JVM: move this test file to tests/integration/")

        monkeypatch.setattr(jvm, "start", refuse)
    _IN_UNIT_TEST[0] = unit
    yield
    _IN_UNIT_TEST[0] = False


def shared_path(*parts: str) -> Path:
    """A path under ``../shared/data``; skips the test where it is absent, except in CI, where it must exist."""
    if UNIT_TIER or _IN_UNIT_TEST[0]:
        raise RuntimeError("a unit test (tests/unit/) reads nothing of ../shared: move this test file to "
                           "tests/integration/")
    path = SHARED.joinpath(*parts)
    if not path.exists():
        if os.environ.get("CI"):
            raise FileNotFoundError(f"{path} is missing: CI needs ../shared/data beside the clone")
        pytest.skip(f"{path} not available")
    return path


def splade_tiny_dir() -> Path:
    """The offline splade-tiny weights; skips the test where they are absent, except in CI, where they must exist."""
    from lsr_eval.errors import InputError
    from lsr_eval.models.offline import resolve_model

    try:
        return Path(resolve_model("splade-tiny"))
    except InputError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(e))


@pytest.fixture
def scifact_dir() -> Path:
    return shared_path("beir", "scifact")


def write_beir(folder: Path, docs: list[dict], queries: list[dict], qrels: list[tuple[str, str, int]],
               split: str = "test") -> Path:
    """Write a BEIR-format folder."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q) + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    with open(folder / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q, d, r in qrels:
            f.write(f"{q}\t{d}\t{r}\n")
    return folder


TINY_DOCS = [
    {"_id": "d1", "title": "Sparse retrieval", "text": "Learned sparse retrieval with SPLADE expands documents."},
    {"_id": "d2", "title": "", "text": "BM25 is a strong lexical baseline for retrieval."},
    {"_id": "d3", "title": "Cats", "text": "Cats sleep most of the day."},
    {"_id": "d4", "title": "Dense", "text": "Dense retrieval encodes queries and documents as vectors."},
    {"_id": "q2", "title": "Self", "text": "The query text itself: lexical baseline retrieval."},
]
TINY_QUERIES = [
    {"_id": "q1", "text": "sparse retrieval SPLADE"},
    {"_id": "q2", "text": "lexical baseline retrieval"},
    {"_id": "q3", "text": "sleeping cats"},
]
TINY_QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 2)]


@pytest.fixture
def tiny_beir(tmp_path: Path) -> Path:
    return write_beir(tmp_path / "tiny", TINY_DOCS, TINY_QUERIES, TINY_QRELS)


#: The quickstart benchmark, whose splade-tiny settings the session's SciFact encoding uses.
QUICKSTART = REPO / "pipelines" / "benchmarks" / "scifact-splade-tiny.yaml"


def quickstart_config() -> dict:
    """The quickstart benchmark's YAML."""
    import yaml

    return yaml.safe_load(QUICKSTART.read_text(encoding="utf-8"))


def quickstart_measures() -> tuple[str, ...]:
    """The measures the quickstart benchmark evaluates on SciFact (the benchmark sets them on the dataset)."""
    return tuple(next(d for d in quickstart_config()["datasets"] if d.get("label") == "scifact")["measures"])


def quickstart_splade_settings(model: str):
    """``SpladeSettings`` of the quickstart benchmark's splade-tiny system, ``model`` its resolved folder."""
    from lsr_eval.pipeline.splade import SpladeSettings

    cfg = quickstart_config()
    params = next(s for s in cfg["systems"] if s["kind"] == "splade")
    return SpladeSettings.from_flat(**{k: v for k, v in params.items() if k not in ("name", "kind")} | {"model": model})


class ScifactImpact:
    """SciFact test encoded by splade-tiny once per session with the quickstart's settings (1,024 / 256 terms):
    the exported ``JsonVectorCollection``, its Anserini impact index, the test queries as integer weight maps (the
    shared input of the engine tests), and the work folder holding them (``work``, ``settings``)."""

    def __init__(self, work: Path) -> None:
        from lsr_eval.data.datasets import load_dataset
        from lsr_eval.encode.queries import encode_queries
        from lsr_eval.encode.splade import SpladeTextEncoder
        from lsr_eval.export.queries import query_weight_maps
        from lsr_eval.pipeline.splade import ensure_impact_index, load_model

        model_dir = splade_tiny_dir()
        self.dataset = load_dataset(str(shared_path("beir", "scifact")), "test")
        self.work = work
        self.settings = settings = quickstart_splade_settings(str(model_dir))
        model = load_model(settings)
        stages = ensure_impact_index(self.dataset, model, settings, work, threads=2)
        self.collection = Path(stages["paths"]["collection"])
        self.anserini_index = Path(stages["index_dir"])
        encoded = encode_queries(self.dataset.queries(), SpladeTextEncoder(model.query), batch_size=32)
        self.queries: dict[str, dict[str, int]] = query_weight_maps(encoded.vectors, settings.export.scale)
        self.qrels = self.dataset.qrels()
        self.documents = stages["export"]["counts"]["documents_out"]


def pytest_collection_modifyitems(config, items):
    """The session's SciFact encoding (:func:`scifact_impact`, minutes on 2 cores) starts first and is waited for
    least: the first file that uses it runs first, its tests that use it before its others, and the other files that
    use it come once the other workers have run the encoding's length of longer files (pytest-xdist hands files out
    in this order with ``--no-loadscope-reorder``, as ``make test`` runs it); the rest go longest first
    (:mod:`scheduling`, by ``tests/durations.json``)."""
    items[:] = scheduling.schedule(items, lambda item: scheduling.file_of(item.nodeid),
                                   lambda item: "scifact_impact" in getattr(item, "fixturenames", ()),
                                   scheduling.read_durations(), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


#: Seconds per test node id, gathered by the process that reports (the controller under pytest-xdist).
_seconds: list[tuple[str, float]] = []


def pytest_runtest_logreport(report) -> None:
    _seconds.append((report.nodeid, report.duration))


def pytest_sessionfinish(session) -> None:
    """The controller writes this run's seconds per test file into :data:`scheduling.RECORDED`, over what it held
    and ``tests/durations.json``'s files, so that runs of parts add up to a whole to refresh the order from."""
    if hasattr(session.config, "workerinput") or not _seconds:
        return
    try:
        base = {**scheduling.read_durations(), **scheduling.read_durations(scheduling.RECORDED)}
        scheduling.record(scheduling.total_by_file(_seconds), base)
    except OSError as e:
        print(f"\ntests/conftest.py: cannot write {scheduling.RECORDED} ({e}); later runs order test files by "
              f"{scheduling.DURATIONS}", file=sys.stderr)


def _run_folder(tmp_path_factory) -> Path:
    """The run's temporary folder: under pytest-xdist the one above each worker's own, shared by the workers."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


#: Made in the run's folder by the first worker to need :func:`scifact_impact` (the one that encodes SciFact), and
#: given the text "done" once its encoding is built.
ENCODING_MARKER = "scifact-impact.encoding"


@pytest.fixture(scope="session")
def scifact_impact(tmp_path_factory) -> ScifactImpact:
    """SciFact test through splade-tiny (encoded once per run: minutes on 2 cores). Under pytest-xdist the
    workers share one work folder: the first encodes and indexes, the others wait on its cache lock and reuse it."""
    work = _run_folder(tmp_path_factory) / "scifact-impact"
    work.mkdir(parents=True, exist_ok=True)
    marker = work.parent / ENCODING_MARKER
    try:
        marker.open("x").close()  # only the first worker marks it: the later ones find the encoding under way or done
        first = True
    except FileExistsError:
        first = False
    try:
        return ScifactImpact(work)
    finally:
        if first:
            marker.write_text("done")


def _encoding_under_way(tmp_path_factory) -> bool:
    """Whether a worker is encoding SciFact for :func:`scifact_impact` now."""
    try:
        return (_run_folder(tmp_path_factory) / ENCODING_MARKER).read_text() != "done"
    except FileNotFoundError:
        return False


_yielded = False


@pytest.fixture(autouse=True)
def _yield_to_the_encoding(request, tmp_path_factory) -> None:
    """Under pytest-xdist, a worker that starts a test while another encodes SciFact lowers its own CPU priority
    (nice 10, once; its subprocesses inherit it): the encoding, which the last files wait for, keeps a core."""
    global _yielded
    if (_yielded or not os.environ.get("PYTEST_XDIST_WORKER") or "scifact_impact" in request.fixturenames
            or not _encoding_under_way(tmp_path_factory)):
        return
    os.nice(10)
    _yielded = True
