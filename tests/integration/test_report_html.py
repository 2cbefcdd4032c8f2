"""``lsr-eval report``: the files it writes, and the HTML page holding the tables, figures and manifests."""

from __future__ import annotations

import base64
import contextlib
import csv
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from lsr_eval.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "report"


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("report") / "out"
    code, stdout, _ = run_cli("report", str(DATA), "--out", str(out))
    assert code == 0
    return out, stdout


class Tables(HTMLParser):
    """Cells of each <table id=...> of a page, and the src of each <img>."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.images: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = attrs["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []
        elif tag == "img":
            self.images.append(attrs["src"])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_cli_writes_and_lists_every_file(report):
    out, stdout = report
    listed = [Path(line.strip()) for line in stdout.splitlines()[1:]]
    assert stdout.startswith(f"wrote {len(listed)} files into {out}")
    on_disk = sorted(p for p in out.rglob("*") if p.is_file())
    assert sorted(listed) == on_disk
    names = {p.relative_to(out).as_posix() for p in on_disk}
    for stem in ("rescaling", "efficiency-msmarco-dev", "efficiency-scifact", "benchmark-fusion-nDCG@10",
                 "benchmark-fusion-R@100", "benchmark-rescaling-RR@10", "benchmark-rescaling-nDCG@10", "benchmarks",
                 "training", "rescaling-runs"):
        assert {f"tables/{stem}.{ext}" for ext in ("md", "tex", "csv")} <= names
    for stem in ("flops-msmarco-dev", "latency-msmarco-dev", "flops-scifact", "latency-scifact", "training-loss",
                 "training-active_dims_q", "training-active_dims_d", "head-norm-best-k", "rescaling-dl19",
                 "rescaling-msmarco-dev", "rank-loss-by-k"):
        assert {f"plots/{stem}.png", f"plots/{stem}.pdf"} <= names
        assert (out / "plots" / f"{stem}.png").stat().st_size > 10_000
    manifest = json.loads((out / "manifest.json").read_text())
    # rescaled models on 15 datasets (more than RESCALING_FIGURES_MAX): measure-against-k figures for the in-domain
    # datasets only
    assert sorted(n for n in names if n.startswith("plots/rescaling-")) == [
        f"plots/rescaling-{d}.{ext}" for d in ("dl19", "msmarco-dev") for ext in ("pdf", "png")]
    assert manifest["stage"] == "report" and manifest["counts"]["figures"] == 11
    # the data of each trade-off figure, read back from the figure, is the table's
    drawn = json.loads((out / "plots" / "latency-msmarco-dev.json").read_text())
    table = {r["system"]: r for r in csv.DictReader(open(out / "tables" / "efficiency-msmarco-dev.csv"))}
    assert set(drawn["points"]) == {s for s, r in table.items() if r["latency mean (ms)"] != "missing"}
    assert "splade-ettin-k1 (no latency_mean_ms)" in drawn["note"]  # and the row not drawn is named
    for system, (x, y) in drawn["points"].items():
        assert (x, y) == (float(table[system]["latency mean (ms)"]), float(table[system]["RR@10"])), system
    assert drawn["labels"]["bm25"] == "bm25" and drawn["front"][0] == drawn["points"]["bm25"]
    assert manifest["counts"]["rows"] == 93  # 89 + 8 fusion rows - 4 merged
    assert sorted(manifest["outputs"]) == sorted(n for n in names if n != "manifest.json")


def test_html_holds_tables_figures_and_manifests(report):
    out, _ = report
    page = (out / "index.html").read_text(encoding="utf-8")
    parsed = Tables()
    parsed.feed(page)
    # every table, as in its Markdown file
    for name in ("rescaling", "efficiency-msmarco-dev", "benchmark-fusion-nDCG@10", "benchmarks", "training"):
        md_rows = [[c.strip().removeprefix("**").removesuffix("**") for c in line.strip()[1:-1].split(" | ")]
                   for line in (out / "tables" / f"{name}.md").read_text().splitlines() if line.startswith("|")]
        md_rows.pop(1)  # the alignment row
        assert parsed.tables[f"table-{name}"] == md_rows
    rescaling = {tuple(r[:2]): r for r in parsed.tables["table-rescaling"][1:]}
    assert "n/a (12 of 13)" in rescaling[("sentence-transformers/all-MiniLM-L6-v2", "1")]
    # every PNG embedded, byte for byte, and linked with its PDF
    pngs = sorted((out / "plots").glob("*.png"))
    embedded = [base64.b64decode(src.split(",", 1)[1]) for src in parsed.images]
    assert all(src.startswith("data:image/png;base64,") for src in parsed.images)
    assert sorted(embedded) == sorted(p.read_bytes() for p in pngs)
    for p in pngs:
        assert f'href="plots/{p.stem}.pdf"' in page
    assert 'href="tables/rescaling.tex"' in page
    # manifests: what was run, on what, when
    assert "2026-03-10T12:00:00+00:00" in page and "lsr-eval benchmark rescaling" in page
    assert "AMD EPYC (synthetic)" in page and "train/minilm-k4/manifest.json" in page
    assert re.search(r"\(scifact, bm25\) of fusion merged into the row of rescaling", page)


def test_cli_percent_and_refuses_other_report(report, tmp_path):
    out, _ = report
    code, _, err = run_cli("report", str(DATA), "--out", str(out), "--percent")
    assert code == 2 and "holds a different experiment" in err
    code, _, _ = run_cli("report", str(DATA / "rescaling"), "--out", str(tmp_path / "p"), "--percent")
    assert code == 0
    md = (tmp_path / "p" / "tables" / "rescaling.md").read_text()
    assert "| **34.6†** |" in md and "| **36.0** |" in md  # the best of their columns: bold
    assert not (tmp_path / "p" / "plots" / "training-loss.png").exists()  # one benchmark, no training runs
    code, _, err = run_cli("report", str(tmp_path / "nothing"), "--out", str(tmp_path / "q"))
    assert code == 2 and "does not exist" in err


def test_no_figures_writes_the_same_tables_and_a_page_without_images(report, tmp_path):
    out, _ = report
    code, stdout, _ = run_cli("report", str(DATA), "--out", str(tmp_path / "t"), "--no-figures")
    assert code == 0 and "0 figures" in stdout
    made = sorted(p.relative_to(tmp_path / "t").as_posix() for p in (tmp_path / "t").rglob("*") if p.is_file())
    assert made == sorted(["index.html", "manifest.json"] + [f"tables/{p.name}" for p in (out / "tables").iterdir()])
    for p in (out / "tables").iterdir():
        assert (tmp_path / "t" / "tables" / p.name).read_bytes() == p.read_bytes(), p.name
    page = Tables()
    page.feed((tmp_path / "t" / "index.html").read_text(encoding="utf-8"))
    assert page.images == [] and page.tables
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert manifest["counts"]["figures"] == 0 and manifest["experiment"]["figures"] is False
    code, _, err = run_cli("report", str(DATA), "--out", str(tmp_path / "t"))  # another experiment than with figures
    assert code == 2 and "holds a different experiment" in err
