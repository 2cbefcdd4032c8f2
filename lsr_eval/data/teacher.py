"""Teacher scores for distillation: the cross-encoder scores of MS MARCO train queries and their hard negatives that
naver/splade's efficient SPLADE distils from (``conf/train/data/distil_from_ensemble.yaml``:
``cross-encoder-ms-marco-MiniLM-L-6-v2-scores.pkl.gz``), converted into the ``qid docid score`` lines that
``data.teacher_scores`` reads (:func:`lsr_eval.train.files.read_teacher_scores`).

The file is the hub dataset ``sentence-transformers/msmarco-hard-negatives``; its layout is the one
Sentence-Transformers' MarginMSE example reads (``examples/training/ms_marco/train_bi-encoder_margin-mse.py``:
``ce_scores = pickle.load(fIn)``, then ``ce_scores[qid][pid]``): a dict of query ids to dicts of passage ids to
scores. A pickle can run code when loaded, so it is read by :class:`RestrictedUnpickler`, which builds dicts,
strings and numbers only (numpy float scalars, which some pickles hold, through numpy's scalar constructor with a
float dtype; nothing else). The file's sha256 and its counts are checked against a lock file
(``expect``): a mismatch is an error, and a lock file without them gets them written by the first run that has the
file, to be committed.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import pickle
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lsr_eval.data.lock import check_lock
from lsr_eval.data.trec_files import file_sha256
from lsr_eval.errors import InputError
from lsr_eval.settings import Setting, check

HUB_REPO = "sentence-transformers/msmarco-hard-negatives"
HUB_FILE = "cross-encoder-ms-marco-MiniLM-L-6-v2-scores.pkl.gz"
#: The only globals a teacher pickle may name: numpy's float scalars (``numpy.float32(0.5)`` pickles as
#: ``numpy.core.multiarray.scalar(dtype('float32'), b'...')``), before and after numpy 2 renamed ``core``.
#: The teacher pickle's layout (Sentence-Transformers' MarginMSE): query id -> {passage id: score}.
TEACHER = Setting(help="teacher scores: query id -> {passage id: score}")
_ALLOWED = {("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"), ("numpy", "dtype")}


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, strings and numbers, and numpy float scalars; any other global is refused."""

    def __init__(self, file, source: str) -> None:
        super().__init__(file)
        self.source = source

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise InputError(f"{self.source}: the pickle names {module}.{name}; a teacher-score file holds dicts, "
                             "strings and numbers only, so it is refused (is it the file you meant?)")
        import numpy

        if name == "dtype":
            def float_dtype(kind, *args):
                dtype = numpy.dtype(kind)
                if dtype.kind != "f":
                    raise InputError(f"{self.source}: the pickle holds numpy {dtype} values, not floats")
                return dtype
            return float_dtype
        try:
            from numpy._core.multiarray import scalar
        except ImportError:  # numpy < 2
            from numpy.core.multiarray import scalar
        return scalar


@dataclass(frozen=True)
class TeacherCounts:
    """What went in and what came out: the pickle's queries and (query, passage) pairs, and the lines written."""

    sha256: str
    queries: int
    pairs: int
    lines: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_scores(path: str | os.PathLike) -> dict[Any, dict[Any, Any]]:
    """The ``{qid: {pid: score}}`` dict of a (gzipped) teacher pickle, through :class:`RestrictedUnpickler`."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            scores = RestrictedUnpickler(f, str(path)).load()
    except (pickle.UnpicklingError, EOFError, OSError, ValueError) as e:
        raise InputError(f"{path}: not a readable teacher-score pickle ({e}); download it again") from e
    return check("the teacher scores", scores, dict, TEACHER, str(path))


def convert(pickle_path: str | os.PathLike, out: str | os.PathLike) -> TeacherCounts:
    """Write ``qid docid score`` lines for every pair of the pickle (atomically: ``out`` appears complete or not at
    all); an entry that is not ``{pid: finite number}`` is an error naming the query."""
    pickle_path, out = Path(pickle_path), Path(out)
    digest = file_sha256(pickle_path)
    scores = load_scores(pickle_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    pairs = 0
    with open(partial, "w", encoding="utf-8") as f:
        for qid, passages in scores.items():
            check(f"query {qid!r}", passages, dict, TEACHER, str(pickle_path))
            for pid, score in passages.items():
                value = float(score)
                if not math.isfinite(value):
                    raise InputError(f"{pickle_path}: score of ({qid!r}, {pid!r}) is {score!r}, not finite")
                f.write(f"{qid}\t{pid}\t{value!r}\n")
                pairs += 1
    partial.replace(out)
    return TeacherCounts(digest, len(scores), pairs, pairs)


def check_expected(counts: TeacherCounts, expect: str | os.PathLike) -> str:
    """Compare ``counts`` with the lock file ``expect`` (``sha256``, ``queries``, ``pairs``;
    :func:`lsr_eval.data.lock.check_lock`): a mismatch is an error naming both values; values not yet recorded are
    written into it. Returns what was done, for printing."""
    return check_lock(counts.to_dict(), expect, ("sha256", "queries", "pairs"), "the teacher file")


def fetch(cache_dir: str | os.PathLike | None = None) -> Path:
    """The hub file, downloaded (resumably, by huggingface_hub) or taken from its cache."""
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(HUB_REPO, HUB_FILE, repo_type="dataset", cache_dir=cache_dir))
    except Exception as e:  # network and hub errors: one line
        raise InputError(f"could not download {HUB_FILE} from the hub dataset {HUB_REPO} ({type(e).__name__}: {e}); "
                         "offline, pass a local copy with --pickle") from e


@dataclass(frozen=True)
class TeacherLines:
    """What :func:`teacher_lines` did: the lines' file, its record (``<out>.counts.json``: the source, the hub file
    and the counts), the counts (None when a finished conversion was kept) and the source converted."""

    out: Path
    record: dict[str, Any]
    counts: TeacherCounts | None
    source: Path | None


def teacher_lines(out: str | os.PathLike, pickle_path: str | os.PathLike | None = None,
                  overwrite: bool = False) -> TeacherLines:
    """The teacher scores as ``qid docid score`` lines in ``out``, converted from ``pickle_path`` (default: the hub's
    pickle, downloaded and cached by :func:`fetch`); a finished conversion (``out`` and a readable record) is kept
    unless ``overwrite``."""
    out = Path(out)
    done = out.with_name(out.name + ".counts.json")
    if out.is_file() and done.is_file() and not overwrite:
        try:
            return TeacherLines(out, json.loads(done.read_text(encoding="utf-8")), None, None)
        except ValueError:   # a damaged record: the conversion is not known to be finished, so it runs again
            pass
    source = Path(pickle_path) if pickle_path else fetch()
    if not source.is_file():
        raise InputError(f"{source} does not exist (the teacher pickle to convert)")
    counts = convert(source, out)
    record = {"source": str(source), "hub": f"{HUB_REPO}/{HUB_FILE}", **counts.to_dict()}
    done.write_text(json.dumps(record) + "\n")
    return TeacherLines(out, record, counts, source)
