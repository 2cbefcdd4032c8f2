"""ONNX Runtime query encoder: one query, one thread, the same sparse vectors as :class:`SpladeEncoder`.

``mode="pruned"`` (the default) skips most of the V-wide decoder: an integer-quantised filter finds a superset of
the terms with a positive logit (a Cauchy-Schwarz bound), and only those are computed exactly in float32;
``mode="dense"`` is the plain graph. Exported graphs are cached under ``WORK/onnx_query/``.

Design notes: docs/design.md."""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import threading
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from lsr_eval.errors import ConfigError, InputError, LsrEvalError
from lsr_eval.models.options import BATCH_SIZE, QUERY_RUNTIMES, check_choice
from lsr_eval.settings import check
from lsr_eval.workdir import slot_lock
from lsr_eval.workdir import work_dir as default_work

if TYPE_CHECKING:    # torch, transformers, onnx and onnxruntime are imported when first needed
    from lsr_eval.models.sparsify import Sparsify

ORT_PIP = "pip install 'lsr-eval[onnx]'"  # the extra; constraints.txt pins the tested versions
#: ``pruned``: int8 filter + exact float32 logits of the candidates; ``dense``: every logit (see module doc).
MODES: tuple[str, ...] = ("pruned", "dense")
FORMAT_VERSION = 3
OPSET = 18
#: Decoder rows are quantised to integers in [-W_LEVELS, W_LEVELS] (7 bits, see docs/design.md).
W_LEVELS = 63
#: Added to the candidate bound: covers float32 rounding of the reference logits (~1e-5 here) many times over.
MARGIN = 1e-2
FILTER_FILE, EXACT_FILE, DENSE_FILE, META_FILE = "filter.onnx", "exact.onnx", "dense.onnx", "meta.json"
#: ONNX protobufs are limited to 2 GiB: larger models keep their weights in a side file.
_EXTERNAL_DATA_BYTES = 1 << 30


class MissingDependency(LsrEvalError, ImportError):
    """An optional package needed by the ONNX query path is not installed (the message has the pip command)."""


def _import_onnxruntime():
    try:
        import onnxruntime
    except ImportError as e:
        raise MissingDependency(f"query_runtime='onnx' needs ONNX Runtime, which is not installed: {ORT_PIP} "
                                f"({e})") from None
    return onnxruntime


def _import_onnx():
    try:
        import onnx
    except ImportError as e:
        raise MissingDependency(f"exporting a query encoder to ONNX needs the onnx package: {ORT_PIP} ({e})") \
            from None
    return onnx


def query_encoder(encoder, runtime: str = "torch", *, work_dir: str | os.PathLike | None = None,
                  mode: str = "pruned"):
    """The query encoder for ``runtime`` (:data:`QUERY_RUNTIMES`): ``torch`` -> ``encoder`` itself; ``onnx`` -> an
    :class:`OnnxQueryEncoder` over it (exported on first use into ``work_dir``, see docs/design.md), or ``encoder``
    itself when it already is one."""
    check_choice("query_runtime", runtime, QUERY_RUNTIMES)
    if runtime == "torch" or isinstance(encoder, OnnxQueryEncoder):
        return encoder
    return OnnxQueryEncoder(encoder, work_dir=work_dir, mode=mode)


# ---- cache key --------------------------------------------------------------------------------------------------

def weights_fingerprint(mlm) -> str:
    """sha256 (hex) of a masked LM's class, config and every parameter and buffer (names, dtypes, shapes, bytes)."""
    import torch

    h = hashlib.sha256()
    h.update(f"{type(mlm).__module__}.{type(mlm).__qualname__}\n".encode())
    h.update(mlm.config.to_json_string(use_diff=False).encode())
    seen: dict[tuple, str] = {}
    for name, t in mlm.state_dict().items():
        t = t.detach()
        h.update(f"\n{name}:{t.dtype}:{tuple(t.shape)}:".encode())
        view = (t.untyped_storage().data_ptr(), t.storage_offset(), t.dtype, tuple(t.shape), t.stride())
        if t.numel() and view in seen:
            h.update(f"same-as:{seen[view]}".encode())       # tied weights: hashed once
            continue
        seen[view] = name
        data = t.cpu().contiguous().reshape(-1)
        if data.numel():
            h.update(data.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


# ---- decoder quantisation (shared by the exported filter and the numpy bound: one function, same numbers) --------

class _Decoder:
    """The decoder's float32 weight ``W`` (V x E) and bias ``c`` (V), its 7-bit row quantisation ``q`` and what the
    candidate bound needs per row: ``s`` (scale), ``norm = ||W_v||``, ``err = ||W_v - s_v q_v||`` (float64, rounded
    up by a relative 1e-6)."""

    def __init__(self, weight: np.ndarray, bias: np.ndarray) -> None:
        self.W = np.ascontiguousarray(weight, dtype=np.float32)
        self.c = np.ascontiguousarray(bias, dtype=np.float32)
        w64 = self.W.astype(np.float64)
        amax = np.abs(w64).max(axis=1)
        s = np.where(amax > 0, amax / W_LEVELS, 1.0)
        self.q = np.clip(np.rint(w64 / s[:, None]), -W_LEVELS, W_LEVELS).astype(np.int8)
        self.s = s
        self.norm = np.linalg.norm(w64, axis=1) * (1 + 1e-6)
        self.err = np.linalg.norm(w64 - s[:, None] * self.q, axis=1) * (1 + 1e-6)
        self.s32 = s.astype(np.float32)
        self.norm_max = float(self.norm.max()) if len(self.norm) else 0.0
        self.err_max = float(self.err.max()) if len(self.err) else 0.0


def decoder_of(encoder) -> _Decoder:
    from lsr_eval.models.encoder import chunkable_decoder

    dec = chunkable_decoder(encoder.mlm)
    if dec is None:
        raise ConfigError(f"{type(encoder.mlm).__name__}: the ONNX query path needs a decoder that is a plain "
                          f"linear layer; use query_runtime='torch'")
    weight = dec.weight.detach().float().cpu().numpy()
    bias = (dec.bias.detach().float().cpu().numpy() if dec.bias is not None
            else np.zeros(weight.shape[0], dtype=np.float32))
    return _Decoder(weight, bias)


# ---- export -------------------------------------------------------------------------------------------------------

def _export_head_features(mlm, example_ids: list[int], path: Path) -> None:
    """Trace ``input_ids (1 x L) -> h (L x E)``: the model up to the decoder's input
    (:func:`~lsr_eval.models.encoder.head_features`), without an attention mask (every position is a token)."""
    import torch
    from torch import nn

    from lsr_eval.models.encoder import head_features

    _import_onnx()

    class HeadFeatures(nn.Module):
        def __init__(self, model) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids):
            return head_features(self.model, input_ids, None)[0]

    was_training = mlm.training
    mlm.eval()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")    # the TorchScript exporter's deprecation and tracer warnings
            torch.onnx.export(HeadFeatures(mlm), (torch.tensor([example_ids], dtype=torch.long),), str(path),
                              dynamo=False, opset_version=OPSET, input_names=["input_ids"], output_names=["h"],
                              dynamic_axes={"input_ids": {1: "tokens"}, "h": {0: "tokens"}})
    finally:
        mlm.train(was_training)


def _save(model, path: Path) -> None:
    onnx = _import_onnx()
    big = model.ByteSize() > _EXTERNAL_DATA_BYTES
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    onnx.save_model(model, str(tmp), save_as_external_data=big, all_tensors_to_one_file=True,
                    location=path.name + ".data" if big else None)
    os.replace(tmp, path)


def _append(model, nodes, initializers, outputs) -> None:
    """Add ``nodes`` and ``initializers`` to ``model``'s graph and make ``outputs`` its outputs."""
    g = model.graph
    g.initializer.extend(initializers)
    g.node.extend(nodes)
    del g.output[:]
    g.output.extend(outputs)


def _filter_model(base, dec: _Decoder):
    """``base`` (input_ids -> h) + quantised decoder: outputs h, acc, s_h, emax, hmax (docs/design.md, step 1)."""
    from onnx import TensorProto as T
    from onnx import helper as H
    from onnx import numpy_helper as nh

    V, E = dec.W.shape
    inits = [nh.from_array(np.ascontiguousarray(dec.q.T), "lsr_wq_t"),
             nh.from_array(np.array([1], np.int64), "lsr_axis1")]
    nodes = [
        H.make_node("DynamicQuantizeLinear", ["h"], ["lsr_hq", "s_h", "lsr_zh"]),
        H.make_node("MatMulInteger", ["lsr_hq", "lsr_wq_t", "lsr_zh"], ["acc"]),
        H.make_node("DequantizeLinear", ["lsr_hq", "s_h", "lsr_zh"], ["lsr_hd"]),
        H.make_node("Sub", ["h", "lsr_hd"], ["lsr_e"]),
        H.make_node("ReduceL2", ["lsr_e", "lsr_axis1"], ["lsr_en"], keepdims=0),
        H.make_node("ReduceMax", ["lsr_en"], ["emax"], keepdims=0),
        H.make_node("ReduceL2", ["lsr_hd", "lsr_axis1"], ["lsr_hn"], keepdims=0),
        H.make_node("ReduceMax", ["lsr_hn"], ["hmax"], keepdims=0),
    ]
    outputs = [H.make_tensor_value_info("h", T.FLOAT, ["tokens", E]),
               H.make_tensor_value_info("acc", T.INT32, ["tokens", V]),
               H.make_tensor_value_info("s_h", T.FLOAT, []),
               H.make_tensor_value_info("emax", T.FLOAT, []),
               H.make_tensor_value_info("hmax", T.FLOAT, [])]
    _append(base, nodes, inits, outputs)
    return base


def _pool_nodes(logits: str, bias: str, out: str) -> list:
    """``log(1 + relu(max_t logits[t] + bias))`` (max over axis 0, bias added after the max as the torch path)."""
    from onnx import helper as H

    return [H.make_node("ReduceMax", [logits, "lsr_axis0"], ["lsr_zmax"], keepdims=0),
            H.make_node("Add", ["lsr_zmax", bias], ["lsr_z"]),
            H.make_node("Relu", ["lsr_z"], ["lsr_r"]),
            H.make_node("Add", ["lsr_r", "lsr_one"], ["lsr_r1"]),
            H.make_node("Log", ["lsr_r1"], [out])]


def _pool_inits() -> list:
    from onnx import numpy_helper as nh

    return [nh.from_array(np.array([0], np.int64), "lsr_axis0"), nh.from_array(np.array(1.0, np.float32), "lsr_one")]


def _exact_model(dec: _Decoder):
    """``h`` (L x E), ``idx`` (K) -> ``w`` (K): the SPLADE weights of the vocabulary ids ``idx`` (step 3)."""
    from onnx import TensorProto as T
    from onnx import helper as H
    from onnx import numpy_helper as nh

    V, E = dec.W.shape
    nodes = [H.make_node("Gather", ["W", "idx"], ["lsr_wc"], axis=0),
             H.make_node("Gather", ["c", "idx"], ["lsr_cc"], axis=0),
             H.make_node("Gemm", ["h", "lsr_wc"], ["lsr_logits"], transB=1),
             *_pool_nodes("lsr_logits", "lsr_cc", "w")]
    graph = H.make_graph(nodes, "splade_exact",
                         [H.make_tensor_value_info("h", T.FLOAT, ["tokens", E]),
                          H.make_tensor_value_info("idx", T.INT64, ["candidates"])],
                         [H.make_tensor_value_info("w", T.FLOAT, ["candidates"])],
                         initializer=[nh.from_array(dec.W, "W"), nh.from_array(dec.c, "c"), *_pool_inits()])
    return _model(graph)


def _dense_model(base, dec: _Decoder):
    """``base`` (input_ids -> h) + decoder + pooling: ``weights`` (V), every vocabulary id."""
    from onnx import TensorProto as T
    from onnx import helper as H
    from onnx import numpy_helper as nh

    V, _ = dec.W.shape
    nodes = [H.make_node("MatMul", ["h", "lsr_w_t"], ["lsr_logits"]), *_pool_nodes("lsr_logits", "lsr_c", "weights")]
    inits = [nh.from_array(np.ascontiguousarray(dec.W.T), "lsr_w_t"), nh.from_array(dec.c, "lsr_c"), *_pool_inits()]
    _append(base, nodes, inits, [H.make_tensor_value_info("weights", T.FLOAT, [V])])
    return base


def _model(graph):
    from onnx import helper as H

    model = H.make_model(graph, opset_imports=[H.make_opsetid("", OPSET)], producer_name="lsr-eval")
    model.ir_version = 9          # what onnxruntime 1.31 reads (IR 9 = ONNX 1.15+)
    return model


def _static_shapes(base, max_length: int, vocab_size: int):
    """``base`` with the tracer's shape arithmetic removed where it is not needed: a Reshape whose output shape is
    known but for the token count gets a constant target (that count as -1), an Expand to its input's own shape
    (the same sizes and symbols) becomes an Identity, and nodes no output needs are dropped. Shapes come from ONNX
    Runtime's symbolic shape inference; the result is kept only if it gives ``h`` bit for bit equal to ``base``'s
    on token counts 1, 2 and ``max_length`` (else, or where the inference fails, ``base`` itself is returned)."""
    from onnx import numpy_helper as nh

    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

        model = SymbolicShapeInference.infer_shapes(copy.deepcopy(base), auto_merge=True)
    except Exception:      # an op the inference does not know: keep the traced graph
        return base
    g = model.graph
    # a dimension: its size, or its symbol's name (the same name: the same size), or None (unknown)
    shapes = {vi.name: [d.dim_value if d.HasField("dim_value") else d.dim_param or None
                        for d in vi.type.tensor_type.shape.dim] for vi in [*g.value_info, *g.output, *g.input]}
    for n, node in enumerate(g.node):
        out, src = shapes.get(node.output[0]), shapes.get(node.input[0]) if node.input else None
        if node.op_type == "Reshape" and out is not None and sum(not isinstance(d, int) for d in out) <= 1:
            name = f"lsr_static_shape_{n}"
            target = [d if isinstance(d, int) else -1 for d in out]
            g.initializer.append(nh.from_array(np.array(target, np.int64), name))
            node.input[1] = name
        elif node.op_type == "Expand" and out is not None and src == out and None not in out:
            node.op_type = "Identity"
            del node.input[1:]
    needed, keep = {o.name for o in g.output}, []
    for node in reversed(g.node):
        if any(o in needed for o in node.output):
            keep.append(node)
            needed.update(node.input)
    del g.node[:]
    g.node.extend(reversed(keep))
    inits = [t for t in g.initializer if t.name in needed]
    del g.initializer[:]
    g.initializer.extend(inits)
    del g.value_info[:]
    ort = _import_onnxruntime()
    try:
        a, b = (_session(ort, m.SerializeToString()) for m in (base, model))
        for L in sorted({1, 2, max(1, max_length)}):
            x = (np.arange(7, 7 + L, dtype=np.int64) % vocab_size).reshape(1, L)
            if not np.array_equal(a.run(None, {"input_ids": x})[0], b.run(None, {"input_ids": x})[0]):
                return base
    except Exception:      # the rewritten graph does not load or run: keep the traced one
        return base
    return model


def export_query_model(encoder, folder: str | os.PathLike, mode: str = "pruned") -> Path:
    """Write the ONNX file(s) of ``mode`` for ``encoder`` into ``folder`` (see docs/design.md); returns ``folder``."""
    check_choice("mode", mode, MODES)
    onnx = _import_onnx()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    dec = decoder_of(encoder)
    example = encoder.tokenizer.backend_tokenizer.encode("splade query encoder export").ids if getattr(
        encoder.tokenizer, "backend_tokenizer", None) is not None else encoder.tokenizer("splade query")["input_ids"]
    traced = folder / f"head_features.tmp{os.getpid()}.onnx"
    try:
        _export_head_features(encoder.mlm, list(example), traced)
        base = onnx.load(str(traced))
    finally:
        for p in (traced, traced.with_name(traced.name + ".data")):
            if p.exists():
                p.unlink()
    if [o.name for o in base.graph.output] != ["h"]:
        raise ConfigError(f"{type(encoder.mlm).__name__}: unexpected exported outputs "
                          f"{[o.name for o in base.graph.output]}")
    if base.ByteSize() <= _EXTERNAL_DATA_BYTES:      # checked in memory: small models only
        base = _static_shapes(base, encoder.max_length, dec.W.shape[0])
    if mode == "dense":
        _save(_dense_model(base, dec), folder / DENSE_FILE)
    else:
        _save(_exact_model(dec), folder / EXACT_FILE)
        _save(_filter_model(base, dec), folder / FILTER_FILE)
    return folder


def part_sessions(enc: OnnxQueryEncoder) -> dict[str, object]:
    """The two expensive parts of the ``pruned`` design as sessions of their own, for timing them alone:
    ``transformer`` (input_ids -> h, the model up to the decoder's input) and ``int8_product`` (``MatMulInteger`` of a
    uint8 L x E input by the quantised decoder, ``acc`` L x V). Exported once into ``enc.folder / "parts"``."""
    from onnx import TensorProto as T
    from onnx import helper as H
    from onnx import numpy_helper as nh

    ort = _import_onnxruntime()
    folder = enc.folder / "parts"
    folder.mkdir(parents=True, exist_ok=True)
    h_path, mm_path = folder / "transformer.onnx", folder / "int8_product.onnx"
    if not h_path.is_file():
        ids = enc.tokenize("splade query encoder export").ids
        tmp = folder / f"transformer.tmp{os.getpid()}.onnx"
        _export_head_features(enc.encoder.mlm, list(ids), tmp)
        os.replace(tmp, h_path)
    if not mm_path.is_file():
        V, E = enc._dec.W.shape
        graph = H.make_graph([H.make_node("MatMulInteger", ["hq", "wq_t", "zh"], ["acc"])], "int8_product",
                             [H.make_tensor_value_info("hq", T.UINT8, ["tokens", E]),
                              H.make_tensor_value_info("zh", T.UINT8, [])],
                             [H.make_tensor_value_info("acc", T.INT32, ["tokens", V])],
                             initializer=[nh.from_array(np.ascontiguousarray(enc._dec.q.T), "wq_t")])
        _save(_model(graph), mm_path)
    return {"transformer": _session(ort, h_path), "int8_product": _session(ort, mm_path)}


# ---- the encoder ----------------------------------------------------------------------------------------------------

def _session(ort, path: Path | bytes):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    source = path if isinstance(path, bytes) else str(path)      # a file, or a serialised model
    return ort.InferenceSession(source, so, providers=["CPUExecutionProvider"])


class OnnxQueryEncoder:
    """A :class:`~lsr_eval.models.encoder.SpladeEncoder`'s query path on ONNX Runtime (see module doc).

    ``encode`` and ``terms`` / ``special_ids`` / ``vocab_size`` / ``max_length`` / ``sparsify`` / ``tokenizer``
    behave as the torch encoder's (float32 only); ``encoder`` is the wrapped torch encoder.
    """

    runtime = "onnx"

    def __init__(self, encoder, work_dir: str | os.PathLike | None = None, *, mode: str = "pruned") -> None:
        from lsr_eval.models.encoder import SpladeEncoder

        self.mode = check_choice("mode", mode, MODES)
        ort = _import_onnxruntime()
        if not isinstance(encoder, SpladeEncoder):
            raise ConfigError(f"encoder: expected a SpladeEncoder, got {type(encoder).__name__}")
        backend = getattr(encoder.tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ConfigError(f"{type(encoder.tokenizer).__name__}: the ONNX query path needs a fast tokenizer; "
                              f"use query_runtime='torch'")
        self.precision = self._check_precision(encoder.precision)
        self.encoder = encoder
        self._dec = decoder_of(encoder)

        self.key = {"format_version": FORMAT_VERSION, "mode": self.mode, "opset": OPSET,
                    "w_levels": W_LEVELS, "torch": _torch_version(), "weights_sha256": weights_fingerprint(encoder.mlm)}
        digest = hashlib.sha256(json.dumps(self.key, sort_keys=True).encode()).hexdigest()[:16]
        label = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(encoder.mlm.config.model_type))
        self.folder = default_work(work_dir) / "onnx_query" / f"{label}-{self.mode}-{digest}"
        self.exported = self._ensure_files()
        if self.mode == "dense":
            self._dense = _session(ort, self.folder / DENSE_FILE)
        else:
            self._filter = _session(ort, self.folder / FILTER_FILE)
            self._exact = _session(ort, self.folder / EXACT_FILE)
        from tokenizers import Tokenizer

        tok = Tokenizer.from_str(backend.to_str())
        tok.no_padding()
        tok.enable_truncation(encoder.max_length, strategy="longest_first",
                              direction=getattr(encoder.tokenizer, "truncation_side", "right"))
        self._tok = tok
        self._special = np.zeros(self.vocab_size, dtype=bool)
        self._special[[i for i in self.special_ids if 0 <= i < self.vocab_size]] = True
        if self.mode == "pruned":
            self._bind_filter()

    def _bind_filter(self) -> None:
        """Output buffers of the filter session, allocated once for the longest query and reused by every call (no
        per-call allocation of the L x V product, and memory that stays mapped); a lock keeps calls on one encoder
        from sharing them at the same time."""
        V, E = self._dec.W.shape
        n = max(1, int(self.max_length))
        self._acc_buf = np.empty((n, V), dtype=np.int32)
        self._h_buf = np.empty((n, E), dtype=np.float32)
        self._scalars = {name: np.empty((), dtype=np.float32) for name in ("s_h", "emax", "hmax")}
        self._io = self._filter.io_binding()
        for name, buf in self._scalars.items():
            self._io.bind_output(name, "cpu", 0, np.float32, [], buf.ctypes.data)
        self._approx = np.empty(V, dtype=np.float32)
        self._over = np.empty(V, dtype=bool)
        self._lock = threading.Lock()

    def _run_filter(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float, float]:
        """``h``, ``acc`` (views of the reused buffers), ``s_h``, ``emax``, ``hmax`` of the token ids ``x`` (1 x L)."""
        L = x.shape[1]
        if L > len(self._acc_buf):        # a tokenizer that does not truncate: buffers grown once
            V, E = self._dec.W.shape
            self._acc_buf = np.empty((L, V), dtype=np.int32)
            self._h_buf = np.empty((L, E), dtype=np.float32)
        io = self._io
        io.bind_cpu_input("input_ids", x)
        io.bind_output("h", "cpu", 0, np.float32, [L, self._h_buf.shape[1]], self._h_buf.ctypes.data)
        io.bind_output("acc", "cpu", 0, np.int32, [L, self._acc_buf.shape[1]], self._acc_buf.ctypes.data)
        self._filter.run_with_iobinding(io)
        sc = self._scalars
        return self._h_buf[:L], self._acc_buf[:L], float(sc["s_h"]), float(sc["emax"]), float(sc["hmax"])

    def _exported(self) -> bool:
        """Whether :attr:`folder` holds a complete export with this key (its meta file, written last)."""
        meta = self.folder / META_FILE
        if meta.is_file():
            try:
                return json.loads(meta.read_text(encoding="utf-8")).get("key") == self.key
            except (OSError, ValueError):
                pass
        return False

    def _ensure_files(self) -> bool:
        """Export into :attr:`folder` unless a complete export with the same key is there; True when exported.
        Another process exporting the same model is waited for (:func:`~lsr_eval.workdir.slot_lock`)."""
        if self._exported():
            return False
        with slot_lock(self.folder):
            return False if self._exported() else self._export()

    def _export(self) -> bool:
        meta = self.folder / META_FILE
        t0 = time.perf_counter()
        export_query_model(self.encoder, self.folder, self.mode)
        record = {"key": self.key, "model_type": self.encoder.mlm.config.model_type,
                  "architecture": type(self.encoder.mlm).__name__, "vocab_size": self.vocab_size,
                  "files": sorted(p.name for p in self.folder.iterdir() if p.suffix in (".onnx", ".data")),
                  "export_seconds": time.perf_counter() - t0}
        tmp = meta.with_name(meta.name + f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, meta)
        return True

    # -- what the torch encoder has ------------------------------------------------------------------------------------
    @property
    def tokenizer(self):
        return self.encoder.tokenizer

    @property
    def max_length(self) -> int:
        return self.encoder.max_length

    @property
    def sparsify(self) -> Sparsify:
        return self.encoder.sparsify

    @property
    def vocab_size(self) -> int:
        return int(self._dec.W.shape[0])

    @property
    def special_ids(self) -> list[int]:
        return self.encoder.special_ids

    @property
    def terms(self) -> list[str]:
        return self.encoder.terms

    @staticmethod
    def _check_precision(requested: str):
        """ONNX Runtime runs this path in float32 on the CPU: ``requested`` (``auto`` resolved for the CPU) must be
        fp32 there; the resolved :class:`~lsr_eval.models.precision.Precision` is recorded."""
        from lsr_eval.models.precision import resolve_precision

        resolved = resolve_precision(requested, "cpu")
        if resolved.bf16:
            raise ConfigError(f"query_runtime='onnx' computes in float32 only, but precision={requested!r} resolves to "
                              f"bf16 here ({resolved.reason}): use precision fp32, or query_runtime='torch'")
        return resolved

    def resolved_precision(self, requested: str | None = None):
        """The precision this path computes in (always fp32; ``requested`` other than that is refused)."""
        return self.precision if requested is None else self._check_precision(requested)

    def describe(self) -> dict:
        return {**self.encoder.describe(), "precision": self.precision.name, "runtime": self.runtime,
                "onnx_mode": self.mode,
                "onnxruntime": _import_onnxruntime().__version__, "onnx_folder": str(self.folder)}

    # -- encoding ------------------------------------------------------------------------------------------------------
    def tokenize(self, text: str):
        """The tokenizer backend's ``Encoding`` of ``text`` (special tokens, truncated at the max length)."""
        return self._tok.encode(text)

    def pooled(self, ids: Sequence[int], stats: dict[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(vocabulary ids ascending, float32 weights > 0)`` of one token id sequence, before sparsification.
        ``stats`` (if given) gets added: seconds in the main session run (``session``), in the candidate selection
        (``select``) and in the exact session run (``exact_session``), and the number of ``candidates``."""
        x = np.asarray(ids, dtype=np.int64).reshape(1, -1)
        if x.shape[1] == 0:
            raise InputError("a query needs at least one token")
        clock = time.perf_counter
        t0 = clock()
        if self.mode == "dense":
            w = self._dense.run(None, {"input_ids": x})[0]
            t1 = clock()
            idx = np.flatnonzero(w)
            out = idx, w[idx]
            if stats is not None:
                _add(stats, session=t1 - t0, select=clock() - t1, candidates=len(w))
            return out
        with self._lock:
            h, acc, s_h, emax, hmax = self._run_filter(x)
            t1 = clock()
            if not (math.isfinite(s_h) and math.isfinite(emax) and math.isfinite(hmax)):
                raise InputError(f"non-finite hidden states for token ids {list(ids)[:16]}")
            cand = self._candidates(acc, s_h, emax, hmax)
            t2 = clock()
            if cand.size:
                w = self._exact.run(None, {"h": h, "idx": cand})[0]
                keep = w > 0
                out = cand[keep], w[keep]
            else:
                out = cand, np.zeros(0, np.float32)
        if stats is not None:
            _add(stats, session=t1 - t0, select=t2 - t1, exact_session=clock() - t2, candidates=len(cand))
        return out

    def _candidates(self, acc: np.ndarray, s_h: float, emax: float, hmax: float) -> np.ndarray:
        """Vocabulary ids (int64, ascending) whose logit bound is > 0 (docs/design.md, step 2)."""
        d = self._dec
        m = np.maximum.reduce(acc, axis=0)                 # faster than acc.max(0) (measured)
        approx = np.multiply(m, d.s32, out=self._approx, dtype=np.float32)
        approx *= np.float32(s_h)
        approx += d.c
        loose = emax * d.norm_max + hmax * d.err_max + MARGIN           # the largest bound over the vocabulary
        first = np.flatnonzero(np.greater(approx, -loose, out=self._over))
        tight = approx[first].astype(np.float64) + emax * d.norm[first] + hmax * d.err[first] + MARGIN
        return first[tight > 0].astype(np.int64)

    def sparse_row(self, idx: np.ndarray, values: np.ndarray,
                   rule: Sparsify | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``rule`` (default: the encoder's) applied to one vector's entries (``values > 0``, ``idx`` ascending), as
        :meth:`Sparsify.apply` does on the dense vector: special ids dropped, weights <= threshold dropped, then the
        ``top_k`` largest kept (equal weights: the lower vocabulary id first)."""
        rule = self.sparsify if rule is None else rule
        keep = None
        if rule.drop_special:
            keep = ~self._special[idx]
        if rule.threshold > 0:
            keep = values > rule.threshold if keep is None else keep & (values > rule.threshold)
        if keep is not None and not keep.all():
            idx, values = idx[keep], values[keep]
        if rule.top_k is not None and len(values) > rule.top_k:
            top = np.sort(np.argsort(-values, kind="stable")[:rule.top_k])
            idx, values = idx[top], values[top]
        return idx, values

    def _one(self, text: str, rule: Sparsify,
             stats: dict[str, float] | None) -> tuple[np.ndarray, np.ndarray, int, bool]:
        """Sparsified ``(ids, weights)``, token count and truncation of one text; ``stats`` as :meth:`query_row`."""
        if stats is None:
            enc = self._tok.encode(text)
            return (*self.sparse_row(*self.pooled(enc.ids), rule), len(enc.ids), bool(enc.overflowing))
        clock = time.perf_counter
        t0 = clock()
        enc = self._tok.encode(text)
        t1 = clock()
        pooled = self.pooled(enc.ids, stats)
        t2 = clock()
        idx, val = self.sparse_row(*pooled, rule)
        _add(stats, tokenize=t1 - t0, sparsify=clock() - t2)
        return idx, val, len(enc.ids), bool(enc.overflowing)

    def query_row(self, text: str, stats: dict[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """One query's sparse vector under the encoder's rules: ``(vocabulary ids ascending, float32 weights > 0)``,
        the entries of ``encode([text], sparse=True)``'s row without building the matrix (the query path's per-call
        cost). ``stats`` (if given) gets added the seconds of each part: ``tokenize``, ``session``, ``select``,
        ``exact_session``, ``sparsify`` (and ``candidates``, see :meth:`pooled`)."""
        if not isinstance(text, str):
            raise InputError(f"query: expected a string, got {type(text).__name__}")
        idx, val, _, _ = self._one(text, self.sparsify, stats)
        return idx, val

    def encode(self, texts: Sequence[str], batch_size: int = 32, *, bf16: bool | None = None,
               sparse: bool = False, sparsify: Sparsify | None = None, precision: str | None = None):
        """As :meth:`SpladeEncoder.encode`: vectors of ``texts`` in order, one text per session run
        (``batch_size`` is accepted and checked, not used); float32 only (``bf16=True``, or a ``precision``
        that resolves to bf16 on this CPU, is refused)."""
        from lsr_eval.models.encoder import Encoded
        from lsr_eval.models.sparsify import SPARSIFY, Sparsify

        check("batch_size", batch_size, int, BATCH_SIZE)
        if bf16 is not None:
            precision = "bf16" if bf16 else "fp32"
        self.resolved_precision(precision)
        rule = self.sparsify if sparsify is None else sparsify
        check("sparsify", rule, Sparsify, SPARSIFY)
        texts = list(texts)
        rows_idx, rows_val = [], []
        n_tokens = np.zeros(len(texts), dtype=np.int64)
        truncated = np.zeros(len(texts), dtype=bool)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputError(f"text {i}: expected a string, got {type(text).__name__}")
            idx, val, n_tokens[i], truncated[i] = self._one(text, rule, None)
            rows_idx.append(idx)
            rows_val.append(val)
        V = self.vocab_size
        if sparse:
            import scipy.sparse as sp

            if len(texts) == 1:        # the query path: no concatenation
                indices, data = rows_idx[0].astype(np.int32), rows_val[0].astype(np.float32, copy=False)
                indptr = np.array([0, len(data)], dtype=np.int32)
            else:
                indptr = np.zeros(len(texts) + 1, dtype=np.int32)
                np.cumsum([len(r) for r in rows_idx], out=indptr[1:])
                indices = np.concatenate(rows_idx).astype(np.int32) if rows_idx else np.zeros(0, np.int32)
                data = np.concatenate(rows_val).astype(np.float32) if rows_val else np.zeros(0, np.float32)
            weights = sp.csr_matrix((data, indices, indptr), shape=(len(texts), V), dtype=np.float32)
        else:
            import torch

            dense = np.zeros((len(texts), V), dtype=np.float32)
            for i, (idx, val) in enumerate(zip(rows_idx, rows_val)):
                dense[i, idx] = val
            weights = torch.from_numpy(dense)
        return Encoded(weights, n_tokens, truncated)


def _add(stats: dict[str, float], **values: float) -> None:
    for k, v in values.items():
        stats[k] = stats.get(k, 0.0) + v


def _torch_version() -> str:
    import torch

    return torch.__version__
