"""Named benchmarks: canonical names -> ir_datasets ids, official measures and BM25 conventions.

Names follow the papers' tables; ids are ir_datasets' hierarchical ids (the data are fetched by ir_datasets on
machines with a network, or read from a seeded cache; see docs/guide.md). A benchmark may name other splits
(``nfcorpus`` -> ``dev``, ``train``), reached as ``load_dataset("nfcorpus", "dev")`` or ``nfcorpus/dev``.

MS MARCO's topics and qrels (``msmarco-dev``, ``dl19``, ``dl20``) are also read from the files TREC and Anserini
distribute (:class:`LocalFiles`) when they lie in ``$IR_DATASETS_HOME/msmarco-passage/`` (``lsr-eval seed-irds``
puts them there): ir_datasets caches DL19's topics as one file with all 200 topics, so the 43 judged ones cannot be
seeded into its own layout without changing what ``msmarco-passage/trec-dl-2019`` holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsr_eval.errors import InputError

#: Measures reported for every BEIR dataset (as Pyserini's BEIR regressions).
BEIR_MEASURES = ("nDCG@10", "R@100", "R@1000")
#: TREC Deep Learning's official measures: graded nDCG@10; recall and MAP count grade >= 2 as relevant
#: (``trec_eval -l 2``), as the track overviews and Pyserini's DL regressions report them.
DL_MEASURES = ("nDCG@10", "R@1000(rel=2)", "MAP(rel=2)")


@dataclass(frozen=True)
class LocalFiles:
    """A benchmark's topics (``qid<TAB>text``) and qrels (TREC) as files under ``$IR_DATASETS_HOME/<folder>/``;
    ``judged_only`` keeps the topics that have judgments (as ir_datasets' ``.../judged`` ids)."""

    folder: str
    topics: str
    qrels: str
    judged_only: bool = True

    def names(self) -> tuple[str, str]:
        return self.topics, self.qrels


@dataclass(frozen=True)
class Benchmark:
    """A named benchmark.

    ``remove_query``: drop hits whose document id equals the query id (Pyserini's ``--remove-query``, used for every
    BEIR dataset, where some corpora contain the queries themselves, e.g. ArguAna and Quora).
    """

    name: str
    irds_id: str
    measures: tuple[str, ...]
    remove_query: bool = False
    description: str = ""
    splits: tuple[tuple[str, str], ...] = ()  #: (split, ir_datasets id) of the splits besides the default one
    default_split: str = "test"
    local: LocalFiles | None = None  #: topics and qrels read from files when present (see the module doc)

    def split_names(self) -> list[str]:
        return [self.default_split, *(s for s, _ in self.splits)]

    def irds_for(self, split: str | None) -> str:
        """The ir_datasets id of ``split`` (None: the default split); an unknown split names the known ones."""
        if split is None or split == self.default_split:
            return self.irds_id
        found = dict(self.splits).get(split)
        if found is None:
            others = f"splits: {', '.join(self.split_names())}" if self.splits else "it has no other split"
            raise InputError(f"{self.name} has no split {split!r} ({others})")
        return found

    def dataset_name(self, split: str | None) -> str:
        """``name`` for the default split, ``name/split`` for the others."""
        return self.name if split is None or split == self.default_split else f"{self.name}/{split}"


def _beir(name: str, irds_id: str, description: str, splits: tuple[str, ...] = ()) -> Benchmark:
    """A BEIR dataset; ``splits``: the other splits ir_datasets serves as ``<irds base>/<split>``."""
    base = irds_id.rsplit("/", 1)[0]
    return Benchmark(name, irds_id, BEIR_MEASURES, remove_query=True, description=description,
                     splits=tuple((s, f"{base}/{s}") for s in splits))


def _msmarco(topics: str, qrels: str) -> LocalFiles:
    return LocalFiles("msmarco-passage", topics, qrels)


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("msmarco-dev", "msmarco-passage/dev/small", ("RR@10", "R@1000"),
              description="MS MARCO passage Dev (small): 6,980 queries, 8.8M passages",
              local=_msmarco("queries.dev.small.tsv", "qrels.dev.small.txt")),
    Benchmark("dl19", "msmarco-passage/trec-dl-2019/judged", DL_MEASURES,
              description="TREC DL 2019 passage (judged): 43 queries; recall and MAP count grade >= 2 as relevant",
              local=_msmarco("topics.dl19-passage.tsv", "qrels.dl19-passage.txt")),
    Benchmark("dl20", "msmarco-passage/trec-dl-2020/judged", DL_MEASURES,
              description="TREC DL 2020 passage (judged): 54 queries; recall and MAP count grade >= 2 as relevant",
              local=_msmarco("topics.dl20.tsv", "qrels.dl20-passage.txt")),
    _beir("trec-covid", "beir/trec-covid", "BEIR TREC-COVID"),
    _beir("nfcorpus", "beir/nfcorpus/test", "BEIR NFCorpus (test)", ("dev", "train")),
    _beir("nq", "beir/nq", "BEIR Natural Questions"),
    _beir("hotpotqa", "beir/hotpotqa/test", "BEIR HotpotQA (test)", ("dev", "train")),
    _beir("fiqa", "beir/fiqa/test", "BEIR FiQA-2018 (test)", ("dev", "train")),
    _beir("arguana", "beir/arguana", "BEIR ArguAna"),
    _beir("webis-touche2020", "beir/webis-touche2020/v2", "BEIR Touché-2020 (v2)"),
    _beir("quora", "beir/quora/test", "BEIR Quora (test)", ("dev",)),
    _beir("dbpedia-entity", "beir/dbpedia-entity/test", "BEIR DBPedia-Entity (test)", ("dev",)),
    _beir("scidocs", "beir/scidocs", "BEIR SCIDOCS"),
    _beir("fever", "beir/fever/test", "BEIR FEVER (test)", ("dev", "train")),
    _beir("climate-fever", "beir/climate-fever", "BEIR Climate-FEVER"),
    _beir("scifact", "beir/scifact/test", "BEIR SciFact (test)", ("train",)),
)}

#: Named groups of benchmarks.
GROUPS: dict[str, tuple[str, ...]] = {
    "beir-13": ("trec-covid", "nfcorpus", "nq", "hotpotqa", "fiqa", "arguana", "webis-touche2020", "quora",
                "dbpedia-entity", "scidocs", "fever", "climate-fever", "scifact"),
}


def known_names() -> list[str]:
    return sorted(BENCHMARKS) + sorted(GROUPS)


def unknown_dataset_message(name: str) -> str:
    return (f"unknown dataset {name!r}; known: {', '.join(known_names())}; or use irds:<ir_datasets id>, "
            "a BEIR folder (with --split), or --topics/--qrels files")


def get_benchmark(name: str) -> Benchmark:
    """The benchmark called ``name``; the error lists the known names."""
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise InputError(unknown_dataset_message(name)) from None


def split_spec(spec: str) -> tuple[Benchmark, str | None] | None:
    """``name`` or ``name/split`` of a registry benchmark -> (benchmark, split or None); None for anything else.
    A known name with an unknown split is an error naming the splits."""
    if spec in BENCHMARKS:
        return BENCHMARKS[spec], None
    name, slash, split = spec.partition("/")
    if not slash or name not in BENCHMARKS:
        return None
    bench = BENCHMARKS[name]
    bench.irds_for(split)
    return bench, split


def expand(name: str) -> list[str]:
    """A group name -> its members; a benchmark name -> itself."""
    return list(GROUPS[name]) if name in GROUPS else [get_benchmark(name).name]
