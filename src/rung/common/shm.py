"""Tensors that cross between the judge and the solution process, as shared memory.

The solution process allocates every buffer that crosses (the inputs the judge fills in, the
slots the outputs of a call are copied into) and exports a handle to it; the judge maps it.
That direction is deliberate: mapping reaches from outside the solution's confinement in, never
from inside it out, so the confinement may forbid the solution to reach into any other process.

CUDA: torch's own IPC (what torch.multiprocessing sends: `_share_cuda_` on the producer's
storage, `rebuild_cuda_tensor` on the consumer's side), with its arguments carried as JSON
rather than a pickle, because the judge never unpickles anything the solution process sends.
CPU: one memfd per buffer, sealed against shrinking and growing before the judge hears of it,
so no truncation by the solution can fault the judge's mapping (a truncated /dev/shm file killed
the judge with SIGBUS). The handle is only the descriptor's number: the judge opens
/proc/<the pid it started>/fd/<n>, never a path the solution names, and refuses anything but a
regular file that carries those seals and the size it asked for. Numbers handed out are good
until the next request (`forget_handles`), when the judge has opened them. Past each buffer's
end lies a band of all-ones bytes (NaN in every float dtype) outside the tensor's storage, so a
kernel that reads past an input's end reads NaN, not zeros, and an answer that uses it fails.
Meta tensors (shapes without data, for building kernels ahead of time) carry no memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import stat
from dataclasses import dataclass
from typing import Any

import torch

POISON_BYTES = 64 * 1024  # the band past every CPU buffer; 16 Ki float32 elements
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


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


class BufferRefused(ValueError):
    """A handle from the solution process that names no buffer the judge will map."""


class Exporter:
    """The solution process's side: allocate buffers and describe them to the judge."""

    def __init__(self) -> None:
        self.buffers: dict[int, torch.Tensor] = {}
        self._maps: dict[int, mmap.mmap] = {}
        self._handed: list[int] = []  # descriptors the judge opens before the next request
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
        if spec.nbytes == 0:
            self.buffers[key] = torch.empty(spec.shape, dtype=spec.torch_dtype)
            return key, {"kind": "cpu", "fd": -1}
        fd = os.memfd_create(f"rung-buffer-{key}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        self._handed.append(fd)
        mapped = mapped_bytes(spec.nbytes)
        os.ftruncate(fd, mapped)
        mm = mmap.mmap(fd, mapped)
        mm[spec.nbytes :] = b"\xff" * (mapped - spec.nbytes)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
        flat = torch.frombuffer(mm, dtype=torch.uint8, count=spec.nbytes)  # the band lies past its storage
        self.buffers[key], self._maps[key] = flat.view(spec.torch_dtype).reshape(spec.shape), mm
        return key, {"kind": "cpu", "fd": fd}

    def forget_handles(self) -> None:
        """Close the descriptors handed out with the last answer: the judge has opened them."""
        for fd in self._handed:
            os.close(fd)
        self._handed = []

    def free(self, key: int) -> None:
        """Forget a buffer (the judge's mapping, if any, stays valid)."""
        self.buffers.pop(key, None)
        mm = self._maps.pop(key, None)
        if mm is not None:
            with contextlib.suppress(BufferError):
                mm.close()  # a tensor still viewing it keeps the mapping alive instead


def mapped_bytes(nbytes: int) -> int:
    """The size of a CPU buffer's memfd: its bytes, rounded up to a page, and the poison band."""
    return -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE + POISON_BYTES


def open_buffer(spec: TensorSpec, handle: dict[str, Any], pid: int) -> torch.Tensor:
    """The judge's side: buffer `handle` of solution process `pid`, mapped here."""
    kind = handle["kind"]
    if kind == "meta":
        return torch.empty(spec.shape, dtype=spec.torch_dtype, device="meta")
    if kind == "cuda":
        return _open_cuda(spec, handle)
    if kind == "cpu":
        if spec.nbytes == 0:
            return torch.empty(spec.shape, dtype=spec.torch_dtype)
        return _open_sealed(spec, pid, int(handle["fd"]))
    raise BufferRefused(f"unknown buffer kind {kind!r}")


def _open_sealed(spec: TensorSpec, pid: int, number: int) -> torch.Tensor:
    """Descriptor `number` of process `pid`, mapped, if it is a memfd sealed against changing
    size, of the size a buffer of `spec` has; BufferRefused otherwise."""
    where = f"/proc/{int(pid)}/fd/{number}"
    try:
        fd = os.open(where, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        raise BufferRefused(f"{where}: {e.strerror}") from None
    try:
        info = os.fstat(fd)
        try:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        except OSError:
            seals = 0  # not a file that can be sealed: not a memfd
        if not stat.S_ISREG(info.st_mode) or seals & _SEALS != _SEALS:
            raise BufferRefused(f"{where} is not a memfd sealed against shrinking and growing")
        if info.st_size != mapped_bytes(spec.nbytes):
            raise BufferRefused(f"{where}: {info.st_size} bytes, expected {mapped_bytes(spec.nbytes)}")
        mm = mmap.mmap(fd, spec.nbytes)
    finally:
        os.close(fd)
    return torch.frombuffer(mm, dtype=torch.uint8).view(spec.torch_dtype).reshape(spec.shape)


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
