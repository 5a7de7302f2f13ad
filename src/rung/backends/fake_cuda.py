"""CUDA's host API without a GPU, for the builds of the compile rung.

A solution's host code is written for a GPU: `with torch.cuda.device(x.device):`, `assert
x.is_cuda`, `torch.cuda.current_stream(x.device).cuda_stream` handed to a launch (as an integer,
or wrapped in `cuda.CUstream`), `torch.empty(n, device=x.device)`, an extension built on the first
call. The compile rung calls it to reach the kernels' builds (load_inline, cute.compile,
tilelang.compile), never to run them, and on the inputs' shapes alone. While `host(arch)` is
open:

- from the moment the solution is called, every tensor torch makes is fake (torch's own
  `FakeTensorMode`: shapes, strides, dtypes and devices, no memory), and `placed` turns the
  inputs the judge placed (meta or CPU tensors) into fake CUDA tensors of the same shapes,
  strides and dtypes;
- torch.cuda's host API answers as one device of `arch` would (`REPLACED`): device guards and
  queries, current, default and new streams (handle 0, the null stream, which any launch
  accepts and no build reads), events, synchronisation, memory figures, all without a GPU.

What the fakes cannot give (a value read out of a tensor, a torch.cuda call not replaced here, a
CUDA library call) raises `NeedsGpu`, naming the solution's line: the rung is SKIPPED saying
so, never an ERROR for lack of a GPU. The same fakes are used on a GPU: a build launches nothing
and needs no device memory there either.
"""

from __future__ import annotations

import re
import traceback
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rung.backends.base import CompileFailed
from rung.backends.cuda_nvcc import NoToolkit

# Figures of the reference part of each arch (the datasheets'): host code sizes grids by them.
_PARTS = {
    (8, 0): ("A100-SXM4-80GB", 108, 80 << 30, 40 << 20, 166912, 167936),
    (9, 0): ("H100 80GB HBM3", 132, 80 << 30, 50 << 20, 232448, 233472),
    (10, 0): ("B200", 148, 180 << 30, 126 << 20, 232448, 233472),
}
# Messages of torch and CUDA that mean "this needed a GPU, or a tensor's values" (torch's own on a
# CPU-only machine, and its fake tensors').
_NEEDS_GPU = re.compile(
    r"not compiled with CUDA|not linked with support for cuda|has no attribute '_cuda|No CUDA GPUs|"
    r"NVIDIA driver|CUDA driver|cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE|Expected a cuda device|"
    r"Cannot access data pointer|data-dependent|not supported for tensor subclasses|FakeTensor|"
    r"Could not run '[\w:.]+' with arguments from the 'CUDA' backend|without ATen_cuda|"
    r"dummy base class _cuda|NVTX functions not installed|0 active drivers",
    re.IGNORECASE,
)

_MISSING = object()  # an attribute a torch without CUDA lacks, deleted again after


class NeedsGpu(NoToolkit):
    """The solution's host code needs what a build without a GPU cannot fake (SKIPPED)."""


class FakeEvent:
    """A `torch.cuda.Event` that records nothing: nothing runs during a build."""

    cuda_event = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def record(self, stream: Any = None) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: Any) -> float:
        return 0.0


class FakeStream:
    """A `torch.cuda.Stream` whose handle is the null stream (0), which every launch accepts."""

    cuda_stream = 0
    priority = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        import torch

        self.device = torch.device("cuda", 0)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> Any:
        return event or FakeEvent()

    def __enter__(self) -> FakeStream:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class _Guard:
    """`torch.cuda.device(...)`, `device_of`, `stream(...)`: a context that changes nothing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> _Guard:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def capability(arch: str) -> tuple[int, int]:
    """`sm_90a` -> (9, 0); `sm_100f` -> (10, 0)."""
    digits = re.fullmatch(r"sm_(\d+)(\d)[a-z]?", arch)
    if not digits:
        raise NoToolkit(f"RUNG_ARCH={arch!r} names no CUDA device: write it as sm_90a")
    return int(digits.group(1)), int(digits.group(2))


def properties(arch: str) -> SimpleNamespace:
    """What `torch.cuda.get_device_properties` says of a device of `arch`."""
    major, minor = capability(arch)
    name, sms, memory, l2, smem_block, smem_sm = _PARTS.get((major, minor), _PARTS[(9, 0)])
    return SimpleNamespace(
        name=f"{name} (rung: compile-only, no GPU)",
        major=major,
        minor=minor,
        multi_processor_count=sms,
        total_memory=memory,
        L2_cache_size=l2,
        shared_memory_per_block=49152,
        shared_memory_per_block_optin=smem_block,
        shared_memory_per_multiprocessor=smem_sm,
        max_threads_per_multi_processor=2048,
        max_threads_per_block=1024,
        regs_per_multiprocessor=65536,
        warp_size=32,
        is_integrated=False,
        is_multi_gpu_board=False,
        uuid="00000000-0000-0000-0000-000000000000",
        gcnArchName="",
    )


def _replacements(arch: str) -> dict[str, Any]:
    props = properties(arch)
    free = (props.total_memory, props.total_memory)
    return {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "init": _nothing,
        "_lazy_init": _nothing,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": _nothing,
        "device": _Guard,
        "device_of": _Guard,
        "stream": _Guard,
        "StreamContext": _Guard,
        "Stream": FakeStream,
        "ExternalStream": FakeStream,
        "Event": FakeEvent,
        "current_stream": lambda device=None: FakeStream(),
        "default_stream": lambda device=None: FakeStream(),
        "set_stream": _nothing,
        "synchronize": _nothing,
        "get_device_properties": lambda device=None: props,
        "get_device_capability": lambda device=None: (props.major, props.minor),
        "get_device_name": lambda device=None: props.name,
        "get_arch_list": lambda: [arch],
        "is_bf16_supported": lambda *args, **kwargs: props.major >= 8,
        "mem_get_info": lambda device=None: free,
        "memory_allocated": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "memory_reserved": lambda device=None: 0,
        "max_memory_reserved": lambda device=None: 0,
        "reset_peak_memory_stats": _nothing,
        "empty_cache": _nothing,
        "manual_seed": _nothing,
        "manual_seed_all": _nothing,
        "seed": _nothing,
        "is_current_stream_capturing": lambda: False,
    }


REPLACED = tuple(_replacements("sm_90a"))


class _Host:
    """What an open `host` changed, and the fake-tensor mode it enters on the first `placed`."""

    def __init__(self, arch: str, stack: ExitStack) -> None:
        import torch

        self.stack = stack
        self.patches = [
            *((torch.cuda, name, value) for name, value in _replacements(arch).items()),
            *((torch.cuda.nvtx, name, _nothing) for name in ("range_push", "range_pop", "mark", "range_end")),
            (torch.cuda.nvtx, "range_start", lambda *args, **kwargs: 0),
            (torch.cuda.nvtx, "range", _Guard),
            (torch.Tensor, "to", _moving(torch.Tensor.to)),
            (torch.Tensor, "cuda", _to_cuda),
            # A module moved (KernelBench's ModelNew, to the inputs' device) swaps each fake
            # parameter for its moved copy, which fake tensors refuse: the copies take their places.
            (torch.nn.Module, "_apply", _apply_replacing),
        ]
        self.saved = [(owner, name, getattr(owner, name, _MISSING)) for owner, name, _ in self.patches]
        self.faking = False

    def apply(self) -> None:
        for owner, name, value in self.patches:
            setattr(owner, name, value)

    def restore(self) -> None:
        for owner, name, value in self.saved:
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)

    def fake_tensors(self) -> None:
        """From now until the host closes, torch makes fake tensors. Entered only once the
        solution is called: the mode imports torch._dynamo (1.7 s of a CPU here), which a
        solution that builds as it is imported never needs; and with torch.cuda as it is, for
        torch._dynamo indexes its functions then."""
        if self.faking:
            return
        from torch._subclasses.fake_tensor import FakeTensorMode

        self.restore()
        try:
            mode = FakeTensorMode(allow_non_fake_inputs=True)
        finally:
            self.apply()
        self.stack.enter_context(mode)
        self.faking = True


_open: list[_Host] = []  # the open `host`, if any


@contextmanager
def host(arch: str, solution: Path) -> Iterator[None]:
    """While open, torch.cuda answers as a device of `arch` and, once the solution is called
    (`placed`), torch makes fake tensors; what the fakes cannot give raises NeedsGpu at
    `solution`'s line."""
    import torch

    with ExitStack() as stack:
        fakes = _Host(arch, stack)
        fakes.apply()
        _open.append(fakes)
        try:
            # No autograd: a build needs none, and recording a move to a CUDA device aborts a
            # CPU-only torch. A fake tensor's data pointer is 0 (aligned to anything).
            stack.enter_context(torch.no_grad())
            stack.enter_context(warnings.catch_warnings())
            warnings.filterwarnings("ignore", message="Accessing the data pointer of FakeTensor")
            try:
                yield
            finally:
                stack.close()  # the fake mode first, then torch.cuda put back
        except Exception as e:
            if isinstance(e, CompileFailed) or not _needs_gpu(e):
                raise
            raise NeedsGpu(_words(e, solution)) from None
        finally:
            _open.pop()
            fakes.restore()


def _to_cuda(self: Any, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """`Tensor.cuda()` onto the one device there is."""
    return self.to("cuda:0", non_blocking=non_blocking)


def _apply_replacing(self: Any, fn: Any, recurse: bool = True) -> Any:
    """`Module._apply` that puts `fn(tensor)` in each parameter's and buffer's place."""
    import torch

    if recurse:
        for child in self.children():
            child._apply(fn)
    for name, param in self._parameters.items():
        if param is not None:
            self._parameters[name] = torch.nn.Parameter(fn(param), param.requires_grad)
    for name, buffer in self._buffers.items():
        if buffer is not None:
            self._buffers[name] = fn(buffer)
    return self


def _moving(to: Any) -> Any:
    """`Tensor.to` where a move to a CUDA device makes a fake CUDA tensor of the same shape and
    strides (and the dtype asked for): torch's own move asks CUDA which device is current, and
    keeps some tensors real (a 0-d integer), neither of which a CPU-only torch can do."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    def to_fake(self: Any, *args: Any, **kwargs: Any) -> Any:
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        if device is None or device.type != "cuda":
            return to(self, *args, **kwargs)
        if isinstance(self, FakeTensor) and self.is_cuda:
            return to(self, dtype) if dtype not in (None, self.dtype) else self
        return torch.empty_strided(
            tuple(self.shape), self.stride(), dtype=dtype or self.dtype, device="cuda:0"
        )

    return to_fake


def real() -> AbstractContextManager[Any]:
    """Inside `host`, a stretch where torch makes real tensors again (a backend's own, on the CPU)."""
    if not _open:
        return nullcontext()
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    return unset_fake_temporarily()


def placed(inputs: Any) -> Any:
    """Inside `host`, `inputs` with every tensor (at any depth of tuples, lists and dicts) a fake
    CUDA tensor of its shape, strides and dtype; outside, `inputs` as they are."""
    if not _open:
        return inputs
    _open[-1].fake_tensors()
    return _on_cuda(inputs)


def _on_cuda(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return torch.empty_strided(tuple(value.shape), value.stride(), dtype=value.dtype, device="cuda:0")
    if isinstance(value, (tuple, list)):
        items = [_on_cuda(v) for v in value]
        return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
    if isinstance(value, dict):
        return {k: _on_cuda(v) for k, v in value.items()}
    return value


def without_memory(tensor: Any) -> bool:
    """Whether `tensor` holds no CUDA memory a kernel could use: fake, meta or on the CPU."""
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(tensor, FakeTensor) or tensor.device.type != "cuda"


def _needs_gpu(e: BaseException) -> bool:
    from torch._subclasses import fake_tensor

    fakes = (
        fake_tensor.DataDependentOutputException,
        fake_tensor.DynamicOutputShapeException,
        fake_tensor.UnsupportedFakeTensorException,
        fake_tensor.UnsupportedOperatorException,
    )
    return isinstance(e, fakes) or bool(_NEEDS_GPU.search(f"{type(e).__name__}: {e}"))


def _words(e: BaseException, solution: Path) -> str:
    own = [
        f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == solution.resolve()
    ]
    where = f" at {solution.name}:{own[-1].lineno} ({(own[-1].line or '').strip()})" if own else ""
    first = (str(e).strip().splitlines() or [""])[0][:300]
    return (
        f"the host code needs a GPU or a tensor's values{where}, which a build from shapes alone "
        "cannot fake: "
        f"{type(e).__name__}: {first}"
    )
