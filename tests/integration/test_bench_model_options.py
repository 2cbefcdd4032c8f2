"""The pipelines/ scripts that run a model: fp32 unless asked (the library's one default), a --device option, the
resolved precision in their records and cache keys, and bf16 measured beside fp32 where a script compares them.
Their options are parsed by the library (each script's ``parse_args`` lives beside its experiment); a whole script
runs as a command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_models import sample_texts, tiny_model

from lsr_eval.models.options import DEFAULT_PRECISION
from lsr_eval.reproduce.pipeline import script_path
from studies.bf16_fidelity import measure as bf16_fidelity
from studies.encode_speed import measure as encode_speed
from studies.gpu_check import measure as gpu_check
from studies.long_queries import measure as long_queries
from studies.pyserini_parity import measure as pyserini_parity
from studies.query_encoder import measure as query_encoder_speed
from studies.query_path import measure as query_path
from studies.train_step import measure as train_step

REPO = Path(__file__).resolve().parents[2]

#: script -> (the library's parser of its options, its required arguments, the precision attribute, its default,
#: the device default)
SCRIPTS = {
    "bench_bf16_fidelity": (bf16_fidelity.parse_args, ["--out", "x"], None, None, "auto"),
    "bench_encode": (encode_speed.parse_args, ["--out", "x"], "precisions", [DEFAULT_PRECISION], "cpu"),
    "bench_long_queries": (long_queries.parse_args, ["--out", "x"], "precision", DEFAULT_PRECISION, "auto"),
    "bench_query_encoder": (query_encoder_speed.parse_args, [], "precision", DEFAULT_PRECISION, "cpu"),
    "bench_query_path": (query_path.parse_args, [], "precision", DEFAULT_PRECISION, "cpu"),
    "bench_train_step": (train_step.parse_args, ["--out", "x"], "precision", DEFAULT_PRECISION, "auto"),
    # None: the benchmark system's own (fp32 unless set)
    "parity_pyserini": (pyserini_parity.parse_args, [], "precision", None, "cpu"),
    "gpu_check": (gpu_check.parse_args, ["--out", "x"], "precisions", ["fp32", "bf16"], "cuda"),
}


def _script(name: str, argv: list[str]) -> subprocess.CompletedProcess:
    """The script once at pipelines/NAME.py (now under studies/: the replay's alias map) on ``argv`` in a process of
    its own (output captured)."""
    return subprocess.run([sys.executable, str(REPO / script_path(f"pipelines/{name}.py")), *argv], capture_output=True,
                          text=True, check=False)


@pytest.mark.parametrize("name", SCRIPTS)
def test_defaults_and_device_validation(name, capsys):
    parse_args, required, attr, default, device = SCRIPTS[name]
    args = parse_args(required)
    assert args.device == device
    if attr is not None:
        assert getattr(args, attr) == default
    assert parse_args([*required, "--device", "cuda:1"]).device == "cuda:1"
    with pytest.raises(SystemExit):
        parse_args([*required, "--device", "gpu"])
    assert "device must be one of auto, cpu, cuda, cuda:N, got 'gpu'" in capsys.readouterr().err


def test_bench_encode_refuses_a_precision_twice():
    assert encode_speed.parse_args(["--out", "x", "--precisions", "fp32", "bf16"]).precisions == ["fp32", "bf16"]
    with pytest.raises(SystemExit):
        encode_speed.parse_args(["--out", "x", "--precisions", "fp32", "fp32"])


def test_query_encoder_keeps_onnx_on_the_cpu():
    done = _script("bench_query_encoder", ["--device", "cuda", "--paths", "torch,onnx"])
    assert done.returncode == 1 and "ONNX paths run on the CPU" in done.stderr, done.stderr[-2000:]


def _bf16_result(flags: list[str], device: str = "cpu") -> dict:
    agreement = {"rows": 4, "scale": 100, "identical_integer_rows": 1, "identical_integer_share": 0.25,
                 "max_abs_weight_difference": 0.03, "max_abs_impact_difference": 3, "impact_entries_differing": 9,
                 "impact_entries": 90, "top_k": 10, "rows_with_same_top_k": 3, "mean_top_k_overlap": 0.975,
                 "min_top_k_overlap": 0.9}
    precisions = {"fp32": {"device": device, "precision": {"name": "fp32", "requested": "fp32", "reason": "requested"},
                           "docs_per_s": 40.0, "speed_vs_first": 1.0, "agreement_with_first": None},
                  "bf16": {"device": device, "precision": {"name": "bf16", "requested": "bf16", "reason": "requested"},
                           "docs_per_s": 8.0, "speed_vs_first": 0.2, "agreement_with_first": agreement}}
    return {"machine": {"cpu": "X", "cores": 2, "cpu_flags": flags}, "torch_threads": 2,
            "documents": [{"model": "m", "device": device, "precisions": precisions}]}


def test_bench_encode_says_whether_bf16_is_native_from_the_recorded_flags():
    from studies.encode_speed import summary as encode_speed

    emulated = "\n".join(encode_speed.precision_lines(_bf16_result(["avx2", "fma"])))
    assert "| m | bf16 (bf16: requested) | cpu | 8.0 | 0.20x |" in emulated
    assert "flags (avx2 fma) include neither avx512_bf16 nor amx_bf16: bf16 is emulated here" in emulated
    assert "identical integer impacts (scale 100) on 1/4 documents (25.0%)" in emulated
    native = "\n".join(encode_speed.precision_lines(_bf16_result(["avx2", "avx512_bf16", "amx_bf16"])))
    assert "This CPU has amx_bf16, avx512_bf16: bf16 is native here." in native
    assert "GPU" in encode_speed.bf16_note(_bf16_result([], "cuda:0"), "cuda:0")
    one = _bf16_result(["avx2"])
    del one["documents"][0]["precisions"]["bf16"]
    assert encode_speed.precision_lines(one) == []          # one precision: no side-by-side section


def test_bench_encode_measures_precisions_side_by_side(tmp_path):
    """The whole script on a tiny model, fp32 and bf16: both timed on the same documents, bf16's vectors compared
    with fp32's (they differ), fp32's equal Pyserini's (its encoder on lsr-eval's model), summary from the json."""
    data = tmp_path / "beir"
    (data / "qrels").mkdir(parents=True)
    texts = sample_texts(8)
    with open(data / "corpus.jsonl", "w", encoding="utf-8") as f:
        for i, text in enumerate(texts):
            f.write(json.dumps({"_id": f"d{i}", "title": "", "text": text}) + "\n")
    with open(data / "queries.jsonl", "w", encoding="utf-8") as f:
        for i in range(3):
            f.write(json.dumps({"_id": f"q{i}", "text": " ".join(texts[i].split()[:6])}) + "\n")
    for split in ("test", "train"):
        (data / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td1\t1\nq2\td2\t1\n")
    model = str(tiny_model("bert"))
    out = tmp_path / "out"
    done = _script("bench_encode", ["--data", str(data), "--models", model, "--query-models", model, "--docs", "8",
                                    "--batch-size", "4", "--part-batches", "1", "--max-length", "64",
                                    "--precisions", "fp32", "bf16", "--out", str(out)])
    assert done.returncode == 0, done.stderr[-4000:]
    r = json.loads((out / "bench_encode.json").read_text())
    (d,) = r["documents"]
    assert list(d["precisions"]) == ["fp32", "bf16"] and d["device"] == "cpu"
    fp32, bf16 = d["precisions"]["fp32"], d["precisions"]["bf16"]
    assert (fp32["precision"]["name"], bf16["precision"]["name"]) == ("fp32", "bf16")
    assert fp32["docs_per_s"] == d["lsr_eval"]["docs_per_s"] and fp32["agreement_with_first"] is None
    assert bf16["speed_vs_first"] == pytest.approx(fp32["seconds"] / bf16["seconds"])
    assert bf16["agreement_with_first"]["rows"] == 8 and bf16["agreement_with_first"]["max_abs_weight_difference"] > 0
    assert d["fidelity_vs_pyserini"]["identical_docs"] == 8
    assert r["queries"][0]["precision"]["name"] == "fp32" and r["queries"][0]["device"] == "cpu"
    manifest = json.loads((out / "manifest.json").read_text())
    assert r["machine"] == manifest["machine"] and "cpu_flags" in r["machine"]
    assert manifest["figures"][model]["docs_per_s_by_precision"] == {"fp32": fp32["docs_per_s"],
                                                                    "bf16": bf16["docs_per_s"]}
    from studies.encode_speed.summary import summaries

    assert summaries(out) == {"summary.md": (out / "summary.md").read_text()}


def test_train_step_runs_in_the_precision_asked(tmp_path):
    from conftest import write_beir

    from studies.train_step.summary import summaries

    texts = sample_texts(6)
    beir = write_beir(tmp_path / "beir", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(texts)],
                      [{"_id": f"q{i}", "text": " ".join(texts[i].split()[:5])} for i in range(3)],
                      [(f"q{i}", f"d{i}", 1) for i in range(3)], split="train")
    runs = {}
    for precision in ("fp32", "bf16"):
        out = tmp_path / precision
        done = _script("bench_train_step", ["--model", str(tiny_model("bert")), "--data", str(beir), "--out", str(out),
                                            "--steps", "1", "--queries", "3", "--negatives", "1", "--device", "cpu",
                                            "--max-length-d", "64", "--precision", precision])
        assert done.returncode == 0, done.stderr[-4000:]
        runs[precision] = json.loads((out / "bench_train_step.json").read_text())
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["inference"]["precision"]["name"] == precision and manifest["inference"]["device"] == "cpu"
        assert ("precision" in manifest["experiment"]) == (precision != "fp32")   # fp32: the identity of before
        assert summaries(out) == {"summary.md": (out / "summary.md").read_text()}
    assert runs["fp32"]["precision"]["name"] == "fp32" and runs["bf16"]["precision"]["name"] == "bf16"
    fp32_loss, bf16_loss = runs["fp32"]["first_step"]["loss_chunked"], runs["bf16"]["first_step"]["loss_chunked"]
    assert fp32_loss != bf16_loss and bf16_loss == pytest.approx(fp32_loss, rel=0.05)
    assert runs["fp32"]["first_step"]["loss_abs_diff"] < 1e-5   # chunked = full logits in fp32


def test_long_query_key_keeps_the_fp32_identity_and_separates_bf16(tmp_path):
    """The cached weight maps of the long queries are keyed by the resolved precision: fp32 adds nothing to the
    key made before precisions were resolved (model, query encoder settings, scale, texts), bf16 adds bf16."""
    from lsr_eval.data.types import Query
    from lsr_eval.pipeline.splade import SpladeSettings, load_model, model_fingerprint
    from studies.long_queries import measure as bench

    queries = [Query(f"q{i}", t) for i, t in enumerate(sample_texts(3))]
    keys = {}
    for precision in ("fp32", "bf16", "auto"):
        s = SpladeSettings.from_flat(model=str(tiny_model("bert")), max_length_q=32, max_length_d=64,
                                     precision=precision, device="cpu")
        model = load_model(s)
        folder = tmp_path / precision
        folder.mkdir()
        bench.impact_weight_maps(model, s, queries, folder)
        (key_file,) = folder.glob("*.key.json")
        keys[precision] = json.loads(key_file.read_text())["key"]
    fp32_model = load_model(SpladeSettings.from_flat(model=str(tiny_model("bert")), max_length_q=32, max_length_d=64))
    described = {k: v for k, v in fp32_model.query.describe().items() if k != "precision"}
    assert keys["fp32"] == json.loads(json.dumps({
        "model": model_fingerprint(str(tiny_model("bert"))), "query_encoder": described, "scale": 100.0,
        "queries": bench.queries_digest(queries), "n": 3}, sort_keys=True, default=str))
    assert keys["bf16"] == {**keys["fp32"], "bf16": True}
    assert keys["auto"] == keys["fp32"]        # auto resolves to fp32 on this CPU ...


@pytest.mark.precision_sensitive
def test_long_query_key_of_auto_follows_the_cpu(tmp_path, cpu_kind):
    """... and to bf16 where the CPU has native bf16 (simulated): the key names what ran, not the alias."""
    from lsr_eval.data.types import Query
    from lsr_eval.pipeline.splade import SpladeSettings, load_model
    from studies.long_queries import measure as bench

    s = SpladeSettings.from_flat(model=str(tiny_model("bert")), max_length_q=32, max_length_d=64, precision="auto",
                                 device="cpu")
    bench.impact_weight_maps(load_model(s), s, [Query("q0", "sparse retrieval")], tmp_path)
    (key_file,) = tmp_path.glob("*.key.json")
    key = json.loads(key_file.read_text())["key"]
    assert key.get("bf16", False) is (cpu_kind == "bf16-cpu")
