"""On-disk format of encoded vectors: a folder of shards, written atomically so that a crashed run can resume.

Design notes: docs/design.md."""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from lsr_eval.errors import ConfigError, InputError, OutputExistsError
from lsr_eval.manifest import TMP_MARK, atomic_write, write_json  # noqa: F401  (re-exported: encode's users)

FORMAT = "lsr-eval-sparse-vectors/1"
SPEC = "encoding.json"
VOCAB = "vocab.json"
SHARD_RE = re.compile(r"^shard-(\d{5,})\.npz$")
SHARD_TIME_RE = re.compile(r"^shard-(\d{5,})\.time\.json$")
#: how an encoded folder's JSON files are written (compact, UTF-8 kept)
ENCODED_JSON: dict[str, Any] = {"indent": 1, "ensure_ascii": False, "newline": False}
DONE_RE = re.compile(r"^done-rank(\d+)-of-(\d+)\.json$")
_OWN_RE = re.compile(r"^(shard-\d{5,}\.npz|shard-\d{5,}\.time\.json|done-rank\d+-of-\d+\.json|vocab\.json"
                     r"|encoding\.json|manifest\.json)$")


def shard_name(k: int) -> str:
    return f"shard-{k:05d}.npz"


def shard_time_path(shard: Path) -> Path:
    """The file holding the encoding time of ``shard`` (``shard-00000.npz`` -> ``shard-00000.time.json``)."""
    return shard.with_name(shard.name[:-len(".npz")] + ".time.json")


def done_name(rank: int, world_size: int) -> str:
    return f"done-rank{rank:05d}-of-{world_size:05d}.json"


def canonical(obj: Any) -> Any:
    """``obj`` as plain JSON types (refuses what JSON cannot hold)."""
    try:
        return json.loads(json.dumps(obj, sort_keys=True, allow_nan=False))
    except (TypeError, ValueError) as e:
        raise ConfigError(f"not JSON-serialisable: {e}") from e


def read_json(path: Path) -> Any:
    """A JSON file of an encoded folder; a damaged one is refused, naming the folder to remove."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        what = f"invalid JSON at line {e.lineno}: {e.msg}" if isinstance(e, json.JSONDecodeError) else "not UTF-8"
        raise InputError(f"{path}: {what}; {damaged(path.parent)}") from None


def damaged(folder: Path) -> str:
    """What to do about a damaged file of the encoded folder ``folder`` (the end of an error message)."""
    return f"the encoded folder {folder} is damaged: remove that folder and rerun, which encodes it again"


def vocab_sha256(vocab: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps(list(vocab), ensure_ascii=False).encode("utf-8")).hexdigest()


def read_vocab(folder: str | os.PathLike) -> list[str]:
    """Vocabulary id -> token string of an encoded folder."""
    path = Path(folder) / VOCAB
    if not path.exists():
        raise InputError(f"{path} is missing: {folder} is not an encoded-vectors folder")
    vocab = read_json(path)
    if not isinstance(vocab, list) or not all(isinstance(t, str) for t in vocab):
        raise InputError(f"{path}: expected a JSON list of token strings")
    return vocab


# ---- shards -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Shard:
    """One shard in memory: ``weights`` row ``i`` is the vector of ``doc_ids[i]``."""

    doc_ids: list[str]
    weights: sp.csr_matrix
    n_tokens: np.ndarray
    truncated: np.ndarray
    seconds: float | None     # wall time of the run that encoded it; None when not recorded


def _ids_array(ids: Sequence[str]) -> np.ndarray:
    return np.frombuffer(json.dumps(list(ids), ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


def _ids_from(arr: np.ndarray) -> list[str]:
    return json.loads(arr.tobytes().decode("utf-8"))


def write_shard(path: Path, shard: Shard) -> None:
    """Write ``shard`` atomically to ``path``."""
    w = shard.weights
    arrays = {
        "data": w.data.astype(np.float32, copy=False), "indices": w.indices.astype(np.int32, copy=False),
        "indptr": w.indptr.astype(np.int64, copy=False), "shape": np.array(w.shape, dtype=np.int64),
        "doc_ids": _ids_array(shard.doc_ids), "n_tokens": np.asarray(shard.n_tokens, dtype=np.int32),
        "truncated": np.asarray(shard.truncated, dtype=bool),
    }
    if shard.seconds is not None:     # first: a shard present has its time
        write_json(shard_time_path(path), {"seconds": shard.seconds}, **ENCODED_JSON)
    # an uncompressed zip: the arrays' bytes plus a header per member (npy ~128 B, zip ~100 B with the name)
    size = sum(a.nbytes + NPZ_MEMBER_OVERHEAD for a in arrays.values())
    atomic_write(path, lambda f: np.savez(f, **arrays), size=size)


#: Bytes an ``.npz`` member adds to its array's: the npy header and the zip entries, rounded up (a size estimate).
NPZ_MEMBER_OVERHEAD = 256
#: Members every shard holds.
SHARD_MEMBERS = frozenset({"data", "indices", "indptr", "shape", "doc_ids", "n_tokens", "truncated"})
#: What reading a damaged ``.npz`` raises: a bad CRC or zip structure, a bad npy header, a truncated or unreadable
#: member, a missing member, undecodable ids.
_DAMAGE = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, KeyError)


class _ShardFile:
    """An open shard whose reads turn damage into one :class:`InputError` naming the shard and its folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.z = np.load(path, allow_pickle=False)
        except _DAMAGE as e:
            raise self.error(e) from None

    def error(self, e: BaseException) -> InputError:
        if isinstance(e, (FileNotFoundError, PermissionError)):
            return InputError(f"{self.path}: {e.strerror}")
        return InputError(f"{self.path}: fails its check ({type(e).__name__}: {e}); {damaged(self.path.parent)}")

    def __enter__(self) -> _ShardFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.z.close()

    def __getitem__(self, name: str) -> Any:
        try:
            return self.z[name]
        except _DAMAGE as e:
            raise self.error(e) from None

    def ids(self) -> list[str]:
        try:
            return _ids_from(self["doc_ids"])
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise self.error(e) from None

    def seconds(self) -> float | None:
        """The shard's encoding time: its time file, else (older shards) its ``seconds`` member, else None."""
        side = shard_time_path(self.path)
        if side.is_file():
            return float(read_json(side)["seconds"])
        seconds = float(self["seconds"]) if "seconds" in self.z.files else 0.0
        return seconds or None     # older shards written from vectors in memory held 0.0: no time


def shard_problem(path: Path) -> str | None:
    """Why the shard at ``path`` cannot be trusted (not a zip, a member missing, a member whose bytes fail its
    CRC-32), or None when it is whole. Reads every byte once (the price of trusting a cached shard)."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = {n[:-len(".npy")] for n in zf.namelist() if n.endswith(".npy")}
            missing = sorted(SHARD_MEMBERS - names)
            if missing:
                return f"member(s) {', '.join(missing)} missing"
            bad = zf.testzip()
            return f"bad CRC-32 for {bad!r}" if bad is not None else None
    except _DAMAGE as e:
        return f"{type(e).__name__}: {e}"


def read_shard_ids(path: Path) -> list[str]:
    """Document ids of a shard (reads only that member)."""
    with _ShardFile(path) as z:
        return z.ids()


def read_shard_stats(path: Path) -> dict[str, Any]:
    """Ids, row pointers, token counts, truncation flags and time of a shard, without the weights."""
    with _ShardFile(path) as z:
        return {"doc_ids": z.ids(), "indptr": z["indptr"], "n_tokens": z["n_tokens"],
                "truncated": z["truncated"], "seconds": z.seconds()}


def read_shard(path: Path) -> Shard:
    """A whole shard."""
    with _ShardFile(path) as z:
        shape = tuple(int(x) for x in z["shape"])
        data, indices, indptr = z["data"], z["indices"], z["indptr"]
        try:
            weights = sp.csr_matrix((data, indices, indptr), shape=shape)
        except ValueError as e:  # CRCs agree but the arrays do not fit together
            raise z.error(e) from None
        return Shard(z.ids(), weights, z["n_tokens"], z["truncated"], z.seconds())


def list_shards(folder: Path) -> dict[int, Path]:
    """Shard index -> path of the shards present."""
    out = {}
    for f in folder.iterdir():
        m = SHARD_RE.match(f.name)
        if m:
            out[int(m.group(1))] = f
    return dict(sorted(out.items()))


def list_done(folder: Path) -> list[dict[str, Any]]:
    """Contents of the ``done-*`` files."""
    return [read_json(f) for f in sorted(folder.iterdir()) if DONE_RE.match(f.name)]


# ---- the output folder ------------------------------------------------------------------------------------------

def open_output(folder: str | os.PathLike, spec: Mapping[str, Any], vocab: Sequence[str], overwrite: bool,
                world_size: int) -> Path:
    """Create or reopen an encoded-vectors folder for ``spec``.

    Reopening needs the same ``spec`` (else :class:`OutputExistsError`, as ``manifest.prepare_output``): completed
    shards are then reused. ``overwrite`` first deletes this format's files (only in a single-process run: ranks
    would delete each other's shards). A folder holding other files and no ``encoding.json`` is refused.
    """
    path = Path(folder)
    spec = canonical(spec)
    if overwrite and path.exists():
        if world_size > 1:
            raise ConfigError(f"overwrite is refused in a distributed run (ranks would delete each other's shards): "
                              f"clear {path} before starting the ranks")
        for f in path.iterdir():
            if f.is_file() and (_OWN_RE.match(f.name) or TMP_MARK in f.name):
                f.unlink()
    spec_file = path / SPEC
    if spec_file.exists():
        old = read_json(spec_file)
        if old != spec:
            keys = sorted(k for k in set(old) | set(spec) if old.get(k) != spec.get(k))
            raise OutputExistsError(f"{path} holds another encoding ({spec_file}: {', '.join(keys)} differ); "
                                    "choose another folder or pass --overwrite")
        return path
    if path.exists() and not overwrite:
        # vocab.json, encoding.json or temporary files: another rank is creating the folder right now
        others = sorted(f.name for f in path.iterdir() if f.name not in (VOCAB, SPEC) and TMP_MARK not in f.name)
        if others:
            raise OutputExistsError(f"{path} is not empty ({', '.join(others[:3])}) and has no {SPEC}; choose "
                                    "another folder or pass --overwrite")
    path.mkdir(parents=True, exist_ok=True)
    write_json(path / VOCAB, list(vocab), **ENCODED_JSON)
    write_json(spec_file, spec, **ENCODED_JSON)
    if read_json(spec_file) != spec:  # another rank wrote a different spec at the same moment
        raise OutputExistsError(f"{spec_file} was written by another process with different settings")
    return path


def read_spec(folder: Path) -> dict[str, Any]:
    path = folder / SPEC
    if not path.exists():
        raise InputError(f"{path} is missing: {folder} is not an encoded-vectors folder")
    return read_json(path)
