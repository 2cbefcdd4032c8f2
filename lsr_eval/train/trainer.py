"""The training loop shared by ``lsr-eval train`` and ``lsr-eval middle-train``.

Design notes: docs/design.md."""

from __future__ import annotations

import json
import logging
import math
import shutil
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from lsr_eval.errors import OutputExistsError
from lsr_eval.manifest import prepare_output, read_manifest, recorded, write_manifest
from lsr_eval.models.device import resolve_device
from lsr_eval.models.precision import resolve_precision
from lsr_eval.train import distributed
from lsr_eval.train.checkpoint import list_checkpoints, load_checkpoint, save_checkpoint
from lsr_eval.train.config import OptimConfig, OutputConfig, TrainConfig
from lsr_eval.train.schedule import lr_lambda

log = logging.getLogger(__name__)

LOG_FILE = "log.jsonl"
CONFIG_FILE = "config.yaml"
FINAL_MODEL = "model"


@dataclass
class TrainResult:
    """What a call to :func:`run_training` did."""

    status: str                     # "done", "stopped" (stop_after) or "already done"
    step: int
    model_dir: Path
    final_model: Path | None
    log_file: Path
    timings: dict[str, float] = field(default_factory=dict)


def pick_device(choice: str, info: distributed.DistInfo) -> torch.device:
    """``train.device`` -> this process's device (:func:`lsr_eval.models.device.resolve_device`; a GPU per
    local rank)."""
    device = resolve_device(choice, info.local_rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def training_precision(train: TrainConfig, device: torch.device):
    """The precision of the forward pass (:class:`lsr_eval.models.precision.Precision`): ``train.bf16`` true or
    false forces bf16 or fp32; unset, the ``auto`` rule (bf16 autocast only where the hardware has it natively:
    emulated bf16 is 7-40x slower on CPUs without avx512_bf16/AMX)."""
    return resolve_precision("auto" if train.bf16 is None else "bf16" if train.bf16 else "fp32", device)


def param_groups(module: nn.Module, weight_decay: float, params: str = "matrices") -> list[dict[str, Any]]:
    """AdamW groups: weight decay on matrices, none on biases and norm weights (1-D parameters); ``params="all"``:
    on every parameter (naver/splade's optimiser)."""
    decay, no_decay = [], []
    for p in module.parameters():  # deduplicated: tied or shared parameters appear once
        if p.requires_grad:
            (decay if p.ndim >= 2 or params == "all" else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _truncate_log(path: Path, step: int) -> None:
    """Keep the log lines of steps <= ``step`` (a resumed run rewrites what came after its checkpoint)."""
    if not path.exists():
        return
    kept = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip() and json.loads(line).get("step", 0) <= step:
                kept.append(line)
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(kept), encoding="utf-8")
    tmp.replace(path)


def check_outputs(output: OutputConfig, config_key: dict[str, Any], *, resume: bool, overwrite: bool) -> None:
    """Refuse, before anything is loaded, an output folder of another experiment or a model folder with
    checkpoints when neither resuming nor overwriting."""
    out, model_dir = Path(output.dir), Path(output.model_dir)
    old = read_manifest(out) if out.exists() else None
    if not overwrite:
        if old is not None and recorded(old.get("experiment", {}).get("config"), out) != recorded(config_key, out):
            raise OutputExistsError(f"{out} holds another training run ({out / 'manifest.json'}); choose another "
                                    f"output.dir or pass --overwrite")
        if list_checkpoints(model_dir) and not resume:
            raise OutputExistsError(f"{model_dir} holds checkpoints of a run: pass --resume to continue it or "
                                    f"--overwrite to start again")
        if (model_dir / FINAL_MODEL).exists() and not resume:
            raise OutputExistsError(f"{model_dir / FINAL_MODEL} exists (a finished run); pass --overwrite to train "
                                    f"again")


@dataclass
class _Run:
    """What the steps of one training run share: the task and its settings, its optimiser, where it writes, and
    where it stands (the step it starts after, time spent before a resume, when this process's loop began)."""

    task: Any
    stage: str
    train: TrainConfig
    optim: OptimConfig
    info: distributed.DistInfo
    device: torch.device
    out: Path
    model_dir: Path
    module: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    params: list[nn.Parameter]
    start: int = 0
    elapsed_before: float = 0.0
    resumed_from: str | None = None
    t_run: float = 0.0

    @property
    def log_file(self) -> Path:
        return self.out / LOG_FILE


def _prepare_outputs(output: OutputConfig, config: dict[str, Any], config_key: dict[str, Any],
                     experiment: dict[str, Any], *, resume: bool, overwrite: bool) -> None:
    """Main process: check and prepare the output folder (an overwrite clears the old model, checkpoints and log)
    and write the config there."""
    import yaml

    out, model_dir = Path(output.dir), Path(output.model_dir)
    check_outputs(output, config_key, resume=resume, overwrite=overwrite)
    prepare_output(out, experiment, overwrite=overwrite)
    if overwrite:
        for old in (model_dir / "checkpoints", model_dir / FINAL_MODEL):
            if old.exists():
                shutil.rmtree(old)
        (out / LOG_FILE).unlink(missing_ok=True)
    model_dir.mkdir(parents=True, exist_ok=True)
    with open(out / CONFIG_FILE, "w", encoding="utf-8") as f:
        yaml.safe_dump(config, f, sort_keys=False)


def _new_run(task, stage: str, train: TrainConfig, optim: OptimConfig, output: OutputConfig,
             info: distributed.DistInfo, device: torch.device) -> _Run:
    """The task's module on ``device`` with a fresh AdamW optimiser and learning-rate schedule, at step 0."""
    module = task.module.to(device)
    optimizer = torch.optim.AdamW(param_groups(module, optim.weight_decay, optim.weight_decay_params), lr=optim.lr,
                                  eps=optim.adam_eps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(optim.warmup_steps, train.steps, optim.decay))
    params = [p for g in optimizer.param_groups for p in g["params"]]
    return _Run(task, stage, train, optim, info, device, Path(output.dir), Path(output.model_dir), module, optimizer,
                scheduler, params)


def _resume(run: _Run) -> TrainResult | None:
    """Continue from the last checkpoint (model, optimiser, schedule, data order; the log cut back to it): the
    result when the run had already finished, else None (no checkpoint: start at step 0)."""
    model_dir = run.model_dir
    found = list_checkpoints(model_dir)
    if (model_dir / FINAL_MODEL).exists() and not found:
        log.info("%s: training already finished", model_dir)
        return TrainResult("already done", run.train.steps, model_dir, model_dir / FINAL_MODEL, run.log_file)
    if not found:
        log.info("%s: no checkpoint to resume from; starting at step 0", model_dir)
        return None
    state = load_checkpoint(found[-1], modules=run.task.state_modules(), optimizer=run.optimizer,
                            scheduler=run.scheduler, info=run.info)
    run.start, run.elapsed_before = int(state["step"]), float(state.get("elapsed_s", 0.0))
    run.resumed_from = str(found[-1])
    run.task.load_data_state(state.get("data_state", {}))
    log.info("resumed from %s (step %d)", found[-1], run.start)
    if run.info.is_main:
        _truncate_log(run.log_file, run.start)
    return None


def _wrapped(run: _Run) -> nn.Module:
    """The module the steps call: wrapped in DistributedDataParallel when there are several processes."""
    if run.info.world_size == 1:
        return run.module
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(run.module, device_ids=[run.device.index] if run.device.type == "cuda" else None)


def _optimizer_step(run: _Run, net: nn.Module, autocast, step: int) -> tuple[dict[str, float], float, float]:
    """One optimiser step over ``grad_accum`` micro-batches (gradients synchronised on the last one only): the
    logged values averaged over the micro-batches, the gradient norm before clipping, and the learning rate used."""
    train, optim = run.train, run.optim
    run.optimizer.zero_grad(set_to_none=True)
    sums: dict[str, float] = {}
    for a in range(train.grad_accum):
        m = (step - 1) * train.grad_accum + a
        batch = run.task.local_batch(m)
        sync = a == train.grad_accum - 1 or run.info.world_size == 1
        with (nullcontext() if sync else net.no_sync()):
            loss, logs = run.task.compute(net, batch, m, step, autocast)
            (loss / train.grad_accum).backward()
        for k, v in logs.items():
            sums[k] = sums.get(k, 0.0) + v / train.grad_accum
    max_norm = optim.max_grad_norm if optim.max_grad_norm is not None else math.inf
    grad_norm = float(torch.nn.utils.clip_grad_norm_(run.params, max_norm))
    lr = run.optimizer.param_groups[0]["lr"]
    run.optimizer.step()
    run.scheduler.step()
    return sums, grad_norm, lr


def _log_step(run: _Run, writer, bar, record: dict[str, Any], sums: dict[str, float], step: int, last: int) -> None:
    """A step's record into the log (every ``log_every`` steps and the last) and the progress bar; a non-finite
    loss is warned about."""
    if writer is not None and (step % run.train.log_every == 0 or step == last):
        # strict JSON: a non-finite value (diverged loss) is written as null
        writer.write(json.dumps({k: v if not isinstance(v, float) or math.isfinite(v) else None
                                 for k, v in record.items()}) + "\n")
        writer.flush()
    bar.update(1)
    bar.set_postfix(loss=f"{sums.get('loss', float('nan')):.4g}", q=f"{sums.get('active_dims_q', 0):.0f}",
                    d=f"{sums.get('active_dims_d', 0):.0f}", s=f"{record['step_time']:.1f}")
    if not math.isfinite(sums.get("loss", 0.0)):
        log.warning("step %d: loss is %s", step, sums.get("loss"))


def _checkpoint_if_due(run: _Run, step: int, last: int) -> None:
    """A checkpoint every ``checkpoint_every`` steps before the end, and at a stop before the end (``stop_after``)."""
    train = run.train
    periodic = train.checkpoint_every and step % train.checkpoint_every == 0
    if (periodic and step < train.steps) or (step == last and last < train.steps):
        save_checkpoint(run.model_dir, step, modules=run.task.state_modules(), optimizer=run.optimizer,
                        scheduler=run.scheduler, info=run.info, keep=train.keep_checkpoints,
                        trainer_state={"micro_step": step * train.grad_accum, "data_state": run.task.data_state(),
                                       "elapsed_s": run.elapsed_before + time.perf_counter() - run.t_run})


def _train_steps(run: _Run, precision, last: int) -> list[float]:
    """The steps after ``run.start`` up to ``last``, logged and checkpointed; each step's seconds."""
    from tqdm.auto import tqdm

    net = _wrapped(run)
    device, train, info = run.device, run.train, run.info
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if precision.bf16 else nullcontext
    bar = tqdm(total=train.steps, initial=run.start, disable=not (info.is_main and train.progress), desc=run.stage,
               dynamic_ncols=True)
    step_times: list[float] = []
    run.t_run = time.perf_counter()
    run.module.train()
    writer = open(run.log_file, "a", encoding="utf-8") if info.is_main else None
    try:
        for step in range(run.start + 1, last + 1):
            t0 = time.perf_counter()
            sums, grad_norm, lr = _optimizer_step(run, net, autocast, step)
            dt = time.perf_counter() - t0
            step_times.append(dt)
            record = {"step": step, **sums, **run.task.head_norms(), "lr": lr, "grad_norm": grad_norm,
                      "step_time": dt, "examples": step * train.grad_accum * train.batch_size}
            _log_step(run, writer, bar, record, sums, step, last)
            _checkpoint_if_due(run, step, last)
    finally:
        bar.close()
        if writer is not None:
            writer.close()
    return step_times


def _finish(run: _Run, config: dict[str, Any], experiment: dict[str, Any], timings: dict[str, Any],
            manifest_extra: dict[str, Any] | None) -> TrainResult:
    """Main process: save the final model, record the run as done and drop its checkpoints; every process then
    waits for it."""
    final = run.model_dir / FINAL_MODEL
    if run.info.is_main:
        if final.exists():
            shutil.rmtree(final)
        run.task.save_final(final)
        write_manifest(run.out, run.stage, experiment, status="done", config=config, world_size=run.info.world_size,
                       steps=run.train.steps, timings=timings,
                       outputs={"log": str(run.log_file), "model": str(final), "config": str(run.out / CONFIG_FILE)},
                       **(manifest_extra or {}))
        for ckpt in list_checkpoints(run.model_dir):
            shutil.rmtree(ckpt)
        shutil.rmtree(run.model_dir / "checkpoints", ignore_errors=True)
    distributed.barrier()
    return TrainResult("done", run.train.steps, run.model_dir, final, run.log_file, timings)


def run_training(task, *, stage: str, config: dict[str, Any], config_key: dict[str, Any],
                 experiment: dict[str, Any], train: TrainConfig, optim: OptimConfig, output: OutputConfig,
                 info: distributed.DistInfo, device: torch.device, precision=None, resume: bool = False,
                 overwrite: bool = False, stop_after: int | None = None,
                 manifest_extra: dict[str, Any] | None = None) -> TrainResult:
    """Train ``task`` (see docs/design.md) on ``device`` in ``precision`` (default
    :func:`training_precision`); every process calls this."""
    if precision is None:
        precision = training_precision(train, device)
    if info.is_main:
        _prepare_outputs(output, config, config_key, experiment, resume=resume, overwrite=overwrite)
    distributed.barrier()

    run = _new_run(task, stage, train, optim, output, info, device)
    if resume:
        done = _resume(run)
        if done is not None:
            return done
    if info.is_main and run.start == 0:
        run.log_file.unlink(missing_ok=True)
    if info.is_main:
        write_manifest(run.out, stage, experiment, status="running", config=config, world_size=info.world_size,
                       device=str(device), precision=precision.to_dict(), **(manifest_extra or {}))

    last = min(train.steps, stop_after) if stop_after else train.steps
    step_times = _train_steps(run, precision, last)
    elapsed = run.elapsed_before + time.perf_counter() - run.t_run
    timings = {"elapsed_s": round(elapsed, 3), "steps_this_run": len(step_times),
               "mean_step_s": round(sum(step_times) / len(step_times), 4) if step_times else None,
               "resumed_from": run.resumed_from}
    if last < train.steps:
        log.info("stopped after step %d of %d (checkpoint saved; --resume continues)", last, train.steps)
        return TrainResult("stopped", last, run.model_dir, None, run.log_file, timings)
    return _finish(run, config, experiment, timings, manifest_extra)


def reports_dict(reports: dict[str, Any]) -> dict[str, Any]:
    """Init reports (dataclasses) as plain dicts for the manifest."""
    return {k: asdict(v) if hasattr(v, "__dataclass_fields__") else v for k, v in reports.items()}
