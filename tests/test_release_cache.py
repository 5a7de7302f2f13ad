"""The solution process hands freed GPU memory back when it keeps much of it: the judge shares the
GPU and needs room for its float64 references."""

from __future__ import annotations

import torch

from rung.solution.main import CACHE_KEPT_BYTES, release_cache


def test_freed_memory_beyond_the_kept_gib_goes_back_to_the_gpu_and_less_stays(monkeypatch):
    emptied = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(True))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda: 1 * 2**30)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda: 1 * 2**30 + CACHE_KEPT_BYTES + 1)
    release_cache("cuda")
    assert emptied == [True]
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda: 1 * 2**30 + CACHE_KEPT_BYTES)
    release_cache("cuda")
    release_cache("cpu")  # no GPU: nothing to hand back, nothing asked of CUDA
    assert emptied == [True]
