"""A torch tensor without device memory (meta or CPU) shown to CuTe DSL as a CUDA tensor.

CuTe DSL reads a tensor through DLPack: dtype, shape, strides, device, address. Its compiled code
depends on the device (a CUDA tensor is in global memory, `ld.global`; a CPU tensor is generic,
`ld`), so a build from the meta tensors the compile rung passes must see CUDA tensors to match
what the GPU will run. `OnCuda(t).__dlpack__()` hands out a DLPack capsule that says exactly that:
`t`'s dtype, shape and strides on CUDA device 0, at an address aligned to 1 MiB that nothing ever
reads (the kernel is built, not run).
"""

from __future__ import annotations

import ctypes
from typing import Any

KDL_CUDA = 2
FAKE_ADDRESS = 1 << 40  # aligned past any alignment a kernel may assume


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    # No deleter: the memory is owned by the OnCuda object, which the compile holds.
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dlpack_dtype(dtype: Any) -> _DataType:
    """torch's own DLPack code for `dtype`, read from a one-element CPU tensor's capsule."""
    import torch

    from rung.backends import fake_cuda

    with fake_cuda.real():  # a real tensor, whose capsule can be read
        capsule = torch.empty(1, dtype=dtype).__dlpack__()
    found = _Managed.from_address(_capsule_pointer(capsule, b"dltensor")).dl_tensor.dtype
    return _DataType(found.code, found.bits, found.lanes)


class OnCuda:
    """`tensor`'s description, as DLPack of a CUDA tensor; the capsules' memory lives as long as this."""

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor
        self._kept: list[Any] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return (KDL_CUDA, 0)

    def __dlpack__(self, stream: Any = None, **_: Any) -> Any:
        t = self.tensor
        shape = (ctypes.c_int64 * t.dim())(*t.shape)
        strides = (ctypes.c_int64 * t.dim())(*t.stride())
        described = _DLTensor(
            ctypes.c_void_p(FAKE_ADDRESS),
            _Device(KDL_CUDA, 0),
            t.dim(),
            _dlpack_dtype(t.dtype),
            shape,
            strides,
            0,
        )
        managed = _Managed(described, None, None)
        self._kept.append((managed, shape, strides))
        return _capsule_new(ctypes.addressof(managed), b"dltensor", None)
