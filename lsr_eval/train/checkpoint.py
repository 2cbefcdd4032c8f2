"""Training checkpoints for exact resume: ``MODEL_DIR/checkpoints/step-NNNNNNNN/``.

A checkpoint is taken after an optimizer step and holds everything the next step depends on:

* ``model.pt``: state dicts of the trained modules (one per distinct backbone);
* ``optimizer.pt`` (AdamW moments and step counts), ``scheduler.pt`` (the LR schedule's counter);
* ``rng-<rank>.pt``: each process's torch (CPU and CUDA), numpy and Python generator states (dropout draws);
* ``trainer.json``: the step, the number of processes, the data position (micro-steps done and the example
  source's own state), elapsed time, and the config it was trained with.

It is written under a temporary name and renamed when complete, so a crash mid-write leaves the previous one.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lsr_eval.errors import InputError
from lsr_eval.manifest import write_json
from lsr_eval.train import distributed

CHECKPOINTS = "checkpoints"
TRAINER_STATE = "trainer.json"
_NAME = re.compile(r"^step-(\d{8})$")


def checkpoint_dir(model_dir: str | Path, step: int) -> Path:
    return Path(model_dir) / CHECKPOINTS / f"step-{step:08d}"


def list_checkpoints(model_dir: str | Path) -> list[Path]:
    """Complete checkpoints of ``model_dir``, oldest first."""
    root = Path(model_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir()
             if (m := _NAME.match(p.name)) and (p / TRAINER_STATE).is_file()]
    return [p for _, p in sorted(found)]


def rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(model_dir: str | Path, step: int, *, modules: dict[str, torch.nn.Module], optimizer, scheduler,
                    trainer_state: dict[str, Any], info: distributed.DistInfo, keep: int) -> Path | None:
    """Write the checkpoint of ``step`` (every process calls this); keep the newest ``keep``. Returns its path
    on the main process."""
    final = checkpoint_dir(model_dir, step)
    tmp = final.with_name(final.name + ".tmp")
    if info.is_main:
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
    distributed.barrier()
    torch.save(rng_state(), tmp / f"rng-{info.rank}.pt")
    distributed.barrier()
    if not info.is_main:
        distributed.barrier()
        return None
    torch.save({name: m.state_dict() for name, m in modules.items()}, tmp / "model.pt")
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
    write_json(tmp / TRAINER_STATE, dict(trainer_state, step=step, world_size=info.world_size), default=str,
               newline=False)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    for old in list_checkpoints(model_dir)[:-keep]:
        shutil.rmtree(old)
    distributed.barrier()
    return final


def load_modules(path: Path, modules: dict[str, torch.nn.Module]) -> None:
    """Load the trained modules' weights of the checkpoint at ``path`` into ``modules`` (a resume, or the model of an
    intermediate step for a learning curve)."""
    saved = torch.load(path / "model.pt", map_location="cpu", weights_only=False)
    if set(saved) != set(modules):
        raise InputError(f"{path}/model.pt holds {sorted(saved)}, the model being trained has {sorted(modules)}")
    for name, module in modules.items():
        module.load_state_dict(saved[name])


def load_checkpoint(path: Path, *, modules: dict[str, torch.nn.Module], optimizer, scheduler,
                    info: distributed.DistInfo) -> dict[str, Any]:
    """Restore modules, optimizer, scheduler and this process's generators; returns ``trainer.json``."""
    with open(path / TRAINER_STATE, encoding="utf-8") as f:
        state = json.load(f)
    if state.get("world_size") != info.world_size:
        raise InputError(f"{path}: written by {state.get('world_size')} processes, resumed with "
                         f"{info.world_size}; exact resume needs the same number")
    load_modules(path, modules)
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", map_location="cpu", weights_only=False))
    scheduler.load_state_dict(torch.load(path / "scheduler.pt", map_location="cpu", weights_only=False))
    set_rng_state(torch.load(path / f"rng-{info.rank}.pt", map_location="cpu", weights_only=False))
    return state
