"""``lsr-eval encode --device auto``: CUDA (this process's LOCAL_RANK under torchrun) when available, else CPU."""

from __future__ import annotations

import torch

from lsr_eval.commands.encode import _device


def test_auto_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _device("auto") == "cpu"


def test_auto_with_cuda_follows_local_rank(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert _device("auto") == "cuda:0"
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert _device("auto") == "cuda:3"


def test_explicit_device_unchanged():
    assert _device("cpu") == "cpu" and _device("cuda:1") == "cuda:1"
