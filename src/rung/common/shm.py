"""Tensors that cross between the judge and the solution process, as shared memory.

The solution process allocates every buffer that crosses (the inputs the judge fills in, the
slots the outputs of a call are copied into) and exports a handle to it; the judge maps it.
That direction is deliberate: mapping reaches from outside the solution's confinement in, never
from inside it out, so the confinement may forbid the solution to reach into any other process.

CUDA: torch's own IPC (what torch.multiprocessing sends: `_share_cuda_` on the producer's
storage, `rebuild_cuda_tensor` on the consumer's side), with its arguments carried as JSON
rather than a pickle, because the judge never unpickles anything the solution process sends.
CPU: one file per buffer under a folder in /dev/shm, mapped by both processes.
Meta tensors (shapes without data, for building kernels ahead of time) carry no memory.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch


@dataclass(frozen=True)
class TensorSpec:
    """What a buffer holds: shape, dtype (torch's name without the prefix) and device."""

    shape: tuple[int, ...]
    dtype: str
    device: str

    @classmethod
    def of(cls, t: torch.Tensor) -> TensorSpec:
        return cls(tuple(int(s) for s in t.shape), dtype_name(t.dtype), str(t.device))

    @property
    def torch_dtype(self) -> torch.dtype:
        return dtype_of(self.dtype)

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * torch.empty((), dtype=self.torch_dtype).element_size()

    def to_dict(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype, "device": self.device}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TensorSpec:
        return cls(tuple(int(s) for s in d["shape"]), str(d["dtype"]), str(d["device"]))


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_of(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"not a torch dtype: {name!r}")
    return dtype


class Exporter:
    """The solution process's side: allocate buffers and describe them to the judge."""

    def __init__(self, shm_dir: Path) -> None:
        self.shm_dir = shm_dir
        self.buffers: dict[int, torch.Tensor] = {}
        self._maps: dict[int, mmap.mmap] = {}
        self._next = 0

    def allocate(self, spec: TensorSpec) -> tuple[int, dict[str, Any]]:
        """A new zeroed buffer: its id here and the handle the judge maps it by."""
        key = self._next
        self._next += 1
        if spec.device == "meta":
            self.buffers[key] = torch.empty(spec.shape, dtype=spec.torch_dtype, device="meta")
            return key, {"kind": "meta"}
        if spec.device.startswith("cuda"):
            t = torch.zeros(spec.shape, dtype=spec.torch_dtype, device=spec.device)
            self.buffers[key] = t
            return key, {"kind": "cuda", **_cuda_handle(t)}
        path = self.shm_dir / f"buf{key}"
        t, mm = _map_file(path, spec, create=True)
        self.buffers[key], self._maps[key] = t, mm
        return key, {"kind": "cpu", "path": str(path)}

    def free(self, key: int) -> None:
        """Forget a buffer; its file goes too (the judge's mapping, if any, stays valid)."""
        self.buffers.pop(key, None)
        mm = self._maps.pop(key, None)
        if mm is not None:
            with contextlib.suppress(BufferError):
                mm.close()  # a tensor still viewing it keeps the mapping alive instead
            (self.shm_dir / f"buf{key}").unlink(missing_ok=True)


def open_buffer(spec: TensorSpec, handle: dict[str, Any]) -> torch.Tensor:
    """The judge's side: the solution process's buffer, mapped here."""
    kind = handle["kind"]
    if kind == "meta":
        return torch.empty(spec.shape, dtype=spec.torch_dtype, device="meta")
    if kind == "cuda":
        return _open_cuda(spec, handle)
    if kind == "cpu":
        return _map_file(Path(handle["path"]), spec, create=False)[0]
    raise ValueError(f"unknown buffer kind {kind!r}")


def _map_file(path: Path, spec: TensorSpec, create: bool) -> tuple[torch.Tensor, Any]:
    size = spec.nbytes
    if size == 0:
        return torch.empty(spec.shape, dtype=spec.torch_dtype), None
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
    fd = os.open(path, flags, 0o600)
    try:
        if create:
            os.ftruncate(fd, size)
        elif os.fstat(fd).st_size != size:
            raise ValueError(f"{path}: {os.fstat(fd).st_size} bytes, expected {size}")
        mm = mmap.mmap(fd, size)
    finally:
        os.close(fd)
    flat = torch.frombuffer(mm, dtype=torch.uint8)
    return flat.view(spec.torch_dtype).reshape(spec.shape), mm


def _cuda_handle(t: torch.Tensor) -> dict[str, Any]:
    storage = t.untyped_storage()
    device, handle, size, offset, rc_handle, rc_offset, event, sync = storage._share_cuda_()
    return {
        "device": int(device),
        "handle": handle.hex(),
        "storage_bytes": int(size),
        "storage_offset": int(offset),
        "ref_counter": rc_handle.hex(),
        "ref_counter_offset": int(rc_offset),
        "event": event.hex() if event else "",
        "event_sync": bool(sync),
        "tensor_offset": int(t.storage_offset()),
        "stride": list(t.stride()),
    }


def _open_cuda(spec: TensorSpec, h: dict[str, Any]) -> torch.Tensor:
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    return rebuild_cuda_tensor(
        torch.Tensor,
        torch.Size(spec.shape),
        tuple(int(s) for s in h["stride"]),
        int(h["tensor_offset"]),
        torch.UntypedStorage,
        spec.torch_dtype,
        int(h["device"]),
        bytes.fromhex(h["handle"]),
        int(h["storage_bytes"]),
        int(h["storage_offset"]),
        False,
        bytes.fromhex(h["ref_counter"]),
        int(h["ref_counter_offset"]),
        bytes.fromhex(h["event"]) if h["event"] else None,
        bool(h["event_sync"]),
    )
