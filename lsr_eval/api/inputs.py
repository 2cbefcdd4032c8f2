"""What the API's verbs take: runs (in memory, or TREC files) and judgments (a dataset, qrels, a qrels file or a
dataset spec), read into memory one way for every verb (:mod:`~lsr_eval.api.evaluation`,
:mod:`~lsr_eval.api.fusion`, :mod:`~lsr_eval.api.files`): the module they all import, so no two import each other."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence, Union

from lsr_eval.data.datasets import Dataset, load_dataset
from lsr_eval.data.trec_files import read_qrels
from lsr_eval.data.types import Qrels, Run
from lsr_eval.errors import ConfigError

#: What a run argument may be: a run in memory, or the path of a TREC run file.
RunLike = Union[Mapping[str, Mapping[str, float]], str, os.PathLike]
#: What a judgments argument may be: a dataset, qrels in memory, a qrels file, or a dataset spec.
QrelsLike = Union[Dataset, Mapping[str, Mapping[str, int]], str, os.PathLike]


def read_qrels_spec(spec: str | os.PathLike, split: str | None = None
                    ) -> tuple[Qrels, tuple[str, ...] | None, dict[str, Any]]:
    """Qrels from a qrels file (TREC or BEIR TSV) or a dataset spec (registry name, ``irds:<id>``, BEIR folder);
    returns (qrels, the dataset's measures or None for a file, a description for manifests)."""
    path = Path(spec)
    if path.is_file():
        if split is not None:
            raise ConfigError(f"{spec} is a qrels file: a split applies to dataset names and BEIR folders only")
        return read_qrels(path), None, {"qrels_file": str(path.resolve())}
    dataset = load_dataset(str(spec), split)
    return dataset.qrels(), tuple(dataset.measures), {"dataset": dataset.describe()}


def judgments(data: QrelsLike, split: str | None = None
              ) -> tuple[Qrels, dict[str, Any] | None, tuple[str, ...] | None]:
    """(qrels, their description for a manifest or None in memory, the dataset's official measures or None) of any
    :data:`QrelsLike`; ``split`` for a dataset spec."""
    if isinstance(data, Dataset):
        return data.qrels(), {"dataset": data.describe()}, tuple(data.measures)
    if isinstance(data, (str, os.PathLike)):
        qrels, measures, described = read_qrels_spec(data, split)
        return qrels, described, measures
    return {q: dict(j) for q, j in data.items()}, None, None


def as_run(run: RunLike) -> Run:
    """A run in memory: a mapping is returned as a dict, a path is read (:func:`lsr_eval.runs.trec.read_run`)."""
    if isinstance(run, (str, os.PathLike)):
        from lsr_eval.runs.trec import read_run

        return read_run(run)
    return {q: dict(hits) for q, hits in run.items()}


def is_run(value: Any) -> bool:
    """Whether ``value`` is one run in memory (qid -> docid -> score) rather than a mapping of named runs."""
    if not isinstance(value, Mapping):
        return False
    first = next(iter(value.values()), {})
    return isinstance(first, Mapping) and not any(isinstance(v, (Mapping, str, os.PathLike))
                                                  for v in list(first.values())[:1])


def named_runs(runs: RunLike | Sequence[RunLike] | Mapping[str, RunLike]) -> dict[str, RunLike]:
    """name -> run: a mapping of runs keeps its names, a path is named by its file name (its path when two file
    names are equal, and its place too when a path is given twice), a run in memory ``run1``, ``run2``, ..."""
    if isinstance(runs, Mapping) and not is_run(runs):
        return dict(runs)
    if isinstance(runs, (str, os.PathLike)) or is_run(runs):
        runs = [runs]
    runs = list(runs)
    names = [Path(r).name if isinstance(r, (str, os.PathLike)) else f"run{i + 1}" for i, r in enumerate(runs)]
    if len(set(names)) < len(names):
        names = [str(r) if isinstance(r, (str, os.PathLike)) else n for n, r in zip(names, runs)]
    if len(set(names)) < len(names):  # one file given twice: both kept, told apart by their place
        names = [f"{n} ({i + 1})" if names.count(n) > 1 else n for i, n in enumerate(names)]
    return dict(zip(names, runs))
