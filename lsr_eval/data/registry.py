"""Named benchmarks: canonical names -> ir_datasets ids, official measures and BM25 conventions.

Names follow the papers' tables; ids are ir_datasets' hierarchical ids (the data are fetched by ir_datasets on
machines with a network, or read from a seeded cache; see the README).
"""

from __future__ import annotations

from dataclasses import dataclass

from lsr_eval.errors import InputError

#: Measures reported for every BEIR dataset (as Pyserini's BEIR regressions).
BEIR_MEASURES = ("nDCG@10", "R@100", "R@1000")


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


def _beir(name: str, irds_id: str, description: str) -> Benchmark:
    return Benchmark(name, irds_id, BEIR_MEASURES, remove_query=True, description=description)


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("msmarco-dev", "msmarco-passage/dev/small", ("RR@10", "R@1000"),
              description="MS MARCO passage Dev (small): 6,980 queries, 8.8M passages"),
    Benchmark("dl19", "msmarco-passage/trec-dl-2019/judged", ("nDCG@10", "R@1000(rel=2)"),
              description="TREC DL 2019 passage (judged): 43 queries; recall counts grade >= 2 as relevant"),
    _beir("trec-covid", "beir/trec-covid", "BEIR TREC-COVID"),
    _beir("nfcorpus", "beir/nfcorpus/test", "BEIR NFCorpus (test)"),
    _beir("nq", "beir/nq", "BEIR Natural Questions"),
    _beir("hotpotqa", "beir/hotpotqa/test", "BEIR HotpotQA (test)"),
    _beir("fiqa", "beir/fiqa/test", "BEIR FiQA-2018 (test)"),
    _beir("arguana", "beir/arguana", "BEIR ArguAna"),
    _beir("webis-touche2020", "beir/webis-touche2020/v2", "BEIR Touché-2020 (v2)"),
    _beir("quora", "beir/quora/test", "BEIR Quora (test)"),
    _beir("dbpedia-entity", "beir/dbpedia-entity/test", "BEIR DBPedia-Entity (test)"),
    _beir("scidocs", "beir/scidocs", "BEIR SCIDOCS"),
    _beir("fever", "beir/fever/test", "BEIR FEVER (test)"),
    _beir("climate-fever", "beir/climate-fever", "BEIR Climate-FEVER"),
    _beir("scifact", "beir/scifact/test", "BEIR SciFact (test)"),
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


def expand(name: str) -> list[str]:
    """A group name -> its members; a benchmark name -> itself."""
    return list(GROUPS[name]) if name in GROUPS else [get_benchmark(name).name]
