"""What a bench case holds in memory and reads: how many input sets it rotates through and how
many timed outputs it copies out (both bounded by what the GPU has free), the bytes a call must
read from DRAM, and which ceiling its FLOPs run against."""

from __future__ import annotations

from typing import Any

import torch

from rung.common.shm import TensorSpec
from rung.common.trees import leaves

ROTATION_BYTES = 2 * 2**30  # input sets rotated per case: as many as fit in this, 2 to 8
SNAPSHOT_BYTES = 2**30  # output copies of timed calls per case: as many as fit in this, 2 to 4


def read_bytes(inputs: Any, outputs: list[TensorSpec]) -> int:
    """The bytes of a case's inputs a call must read from DRAM (bench flushes the L2 before it),
    less one input tensor shaped as each output: formats that hand the output buffer in among
    the inputs (GPU MODE) have it written, not read, and its writes may stay in the L2."""
    left = list(outputs)
    total = 0
    for t in leaves(inputs):
        spec = TensorSpec.of(t)
        if spec in left:
            left.remove(spec)
            continue
        total += t.numel() * t.element_size()
    return total


def snapshots(specs: list[TensorSpec]) -> int:
    """How many timed calls' outputs are copied out per case: as many as fit in SNAPSHOT_BYTES, 2 to
    4 (each input set among them costs the judge a float64 reference: time to a verdict)."""
    size = sum(s.nbytes for s in specs)
    return max(2, min(4, SNAPSHOT_BYTES // max(size, 1)))


def free_bytes() -> int:
    """What the GPU has free now, this process's allocator cache handed back first."""
    torch.cuda.empty_cache()
    return int(torch.cuda.mem_get_info()[0])


def rotation(
    inputs: tuple[Any, ...],
    free_bytes: int | None = None,
    asked: int = 0,
    outputs: list[TensorSpec] | None = None,
) -> int:
    """How many input sets a case rotates through: `asked` (RUNG_BENCH_SETS) where it is set, else
    as many as fit in ROTATION_BYTES, 2 to 8, counting every tensor however nested (GPU MODE's
    inputs are one tuple, output buffer included). Where the device has little free
    (`free_bytes`), fewer, down to the one set already made, by two rules. Each further set lives
    twice on the GPU, the judge's copy and the one placed in the solution process, and half of
    what is free stays free for the calls' own work. And what the case needs whatever the sets
    (`_case_needs`), with the further sets and a later set's float64 reference, must fit in what is
    free: KernelBench's 6 GiB tensors on an 80 GB GPU fit one set, not two."""
    size = max(sum(t.numel() * t.element_size() for t in leaves(inputs)), 1)
    wanted = asked if asked > 0 else max(2, min(8, ROTATION_BYTES // size))
    if free_bytes is None:
        return wanted
    halves = 1 + free_bytes // 2 // (2 * size)
    needs = _case_needs(inputs, outputs or [])
    fits = 1
    while fits < wanted and needs + 2 * fits * size + _float64_inputs(inputs) <= free_bytes:
        fits += 1
    return max(1, min(wanted, halves, fits))


def _case_needs(inputs: tuple[Any, ...], outputs: list[TensorSpec]) -> int:
    """Bytes a case needs on the GPU beyond its input sets, once set 0 is drawn and its references
    are made: the timed calls' output slots, the solution's own output, and the judge's check of
    a timed output (its copy, and the problem's own check running the reference on a copy of the
    inputs)."""
    out = sum(s.nbytes for s in outputs)
    size = sum(t.numel() * t.element_size() for t in leaves(inputs))
    return snapshots(outputs) * out + out + (out + size + out)


def _float64_inputs(inputs: tuple[Any, ...]) -> int:
    """What a later set's float64 reference adds: its floating inputs upcast (the float64 output
    takes the place of set 0's, which the timed checks let go first)."""
    return sum(t.numel() * 8 for t in leaves(inputs) if t.is_floating_point())


def math_of(inputs: tuple[Any, ...]) -> str:
    """The ceiling a case's FLOPs run against, from its first floating input's dtype (however
    nested: GPU MODE's inputs are one tuple)."""
    for t in leaves(inputs):
        if t.is_floating_point():
            return {torch.float16: "fp16_tensor", torch.bfloat16: "bf16_tensor"}.get(t.dtype, "fp32_vector")
    return "fp32_vector"
