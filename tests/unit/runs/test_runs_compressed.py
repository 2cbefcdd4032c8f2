"""Run files compressed by their suffix: ``.gz`` and ``.xz`` read back to the same run, the same run gives the same
bytes (gzip without a timestamp), and a damaged file is one line naming it."""

from __future__ import annotations

import pytest

from lsr_eval.errors import InputError
from lsr_eval.runs.trec import read_run, write_run

RUN = {"q1": {"d1": 1.5, "d2": 3.0, "d3": 3.0}, "q2": {"d3": 2.25}}


@pytest.mark.parametrize("name", ["run.trec", "run.trec.gz", "run.trec.xz"])
def test_compressed_runs_read_back_the_same(tmp_path, name):
    assert write_run(RUN, tmp_path / name, tag="t") == 4
    assert read_run(tmp_path / name) == RUN
    first = (tmp_path / name).read_bytes()
    write_run(RUN, tmp_path / name, tag="t")
    assert (tmp_path / name).read_bytes() == first          # deterministic bytes
    assert not list(tmp_path.glob("*.tmp"))


def test_the_gzip_header_holds_no_time_and_no_name(tmp_path):
    write_run(RUN, tmp_path / "run.trec.gz", tag="t")
    header = (tmp_path / "run.trec.gz").read_bytes()[:10]
    assert header[3] == 0 and header[4:8] == b"\0\0\0\0"     # FLG: no FNAME; MTIME 0 (RFC 1952)


def test_compressed_text_is_the_plain_run(tmp_path):
    import gzip
    import lzma

    write_run(RUN, tmp_path / "run.trec", tag="t")
    write_run(RUN, tmp_path / "run.trec.gz", tag="t")
    write_run(RUN, tmp_path / "run.trec.xz", tag="t")
    plain = (tmp_path / "run.trec").read_bytes()
    assert gzip.decompress((tmp_path / "run.trec.gz").read_bytes()) == plain
    assert lzma.decompress((tmp_path / "run.trec.xz").read_bytes()) == plain
    assert plain.splitlines()[0] == b"q1 Q0 d3 1 3.0 t"     # trec_eval order: score, then docid descending


@pytest.mark.parametrize("name", ["run.trec.gz", "run.trec.xz"])
def test_a_damaged_compressed_run_is_one_line(tmp_path, name):
    write_run({f"q{i}": {f"d{j}": float(j) for j in range(50)} for i in range(50)}, tmp_path / name)
    data = (tmp_path / name).read_bytes()
    (tmp_path / name).write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=rf"{name}: damaged \.(gz|xz) file"):
        read_run(tmp_path / name)
