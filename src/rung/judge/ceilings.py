"""Measuring a GPU's ceilings: DRAM bandwidth, matrix FLOP/s per dtype, fp32 vector FLOP/s.

Judge side (CUDA). Each figure is timed by the bench protocol (`rung.common.timing`) and uses the
median. DRAM: a 2 GiB device-to-device copy counting bytes read plus written, and a 1 GiB-per-
operand add (two reads per write), the faster of the two being the ceiling: on an H200 the
2^28-element vector adds of `git show 1fb40c7:docs/results/2026-12-03/session-8/NOTES.md` moved 4.40 TB/s where the
copy gave 4.29, and a ceiling below what correct kernels reach would call them faster than light. An 8192^3 matmul
through torch for bf16, fp16, tf32 and plain fp32; a Triton kernel of independent FMA chains in
registers for fp32 vector math. Sustained matmuls hit the power cap, so the SM clock read during
the run is recorded beside them. The L2's size is kept beside the ceilings: the roofline rung's
plausibility check lets that many bytes of a case's traffic stay in the L2.

The launch floor: the least a call that launches one kernel can measure here, an empty Triton
kernel timed as bench times a solution (`measure`: CUPTI's per-call span as `launch_us`, the
event pair around the call as `launch_events_us`), and one replay of a CUDA graph holding it
(`graph_replay_us`). A 256^3 matmul's 0.1 us of roofline is no time any launch can take.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

from rung.common import measure as bench_measure
from rung.common.ceilings_datasheet import datasheet
from rung.common.timing import Flusher, Policy, timed
from rung.judge import gpu_facts, gpu_lock
from rung.judge.clocks import Reading, cuda_uuid

MATMUL_N = 8192
FMA_ROUNDS = 256
LOCK_WAIT_S = 600.0
IDLE_WAIT_S = 1.0  # NVML's utilization sample period is up to a second
# A measured ceiling below this share of the datasheet's is not the card's own. Measured alone,
# an H100 copies at about 90% of its datasheet DRAM and runs bf16 matmuls at 60 to 75%; one
# measured beside other checks read 177 of 989 bf16 TFLOP/s (18%). Consumer and power-capped
# cards (an L4) sit lower on matmuls, hence the wide margin there.
FAR_BELOW = {"dram_gbps": 0.6, "bf16_tensor_tflops": 0.35, "tf32_tensor_tflops": 0.35}


@triton.jit
def _fma_chains(out_ptr, a, b, ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x0 = offs.to(tl.float32) * 1e-7
    x1, x2, x3 = x0 + 1.0, x0 + 2.0, x0 + 3.0
    for _ in tl.static_range(ROUNDS):
        x0 = x0 * a + b
        x1 = x1 * a + b
        x2 = x2 * a + b
        x3 = x3 * a + b
    tl.store(out_ptr + offs, x0 + x1 + x2 + x3)


@triton.jit
def _nothing(out_ptr):
    pass


def launch_floor(policy: Policy, flush: Flusher) -> dict[str, float]:
    """An empty kernel's call as bench would time it, and one graph replay of it, in us."""
    out = torch.empty(1, device="cuda")

    def launch(i: int) -> None:
        _nothing[(1,)](out)

    with tempfile.TemporaryDirectory() as folder:
        timed_call = bench_measure.measure(launch, policy, flush, Path(folder) / "launch.trace.json")
    span = timed_call.get("cupti", timed_call)  # CUPTI's span of the call; the headline is events
    graph = torch.cuda.CUDAGraph()
    launch(0)  # compiled before capture
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        launch(0)
    replay = timed(lambda i: graph.replay(), policy, flush)
    return {
        "launch_us": span["median_ms"] * 1e3,
        "launch_events_us": timed_call["median_ms"] * 1e3,
        "graph_replay_us": replay["median_ms"] * 1e3,
    }


def _matmul(a: torch.Tensor, b: torch.Tensor) -> Any:
    return lambda i: a @ b


def _copy_gbps(policy: Policy, flush: Flusher, n: int = 2**29) -> float:
    """A 2 GiB fp32 device-to-device copy, bytes read plus written."""
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    copy = timed(lambda i: dst.copy_(src), policy, flush)
    return 2 * n * 4 / (copy["median_ms"] / 1e3) / 1e9


def _add_gbps(policy: Policy, flush: Flusher, n: int = 2**28) -> float:
    """z = x + y over 1 GiB fp32 operands: two reads per write."""
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    add = timed(lambda i: torch.add(x, y, out=z), policy, flush)
    return 3 * n * 4 / (add["median_ms"] / 1e3) / 1e9


def measure() -> dict[str, Any]:
    """The ceilings, measured holding the GPU's lock (`rung.judge.gpu_lock`: other checks of this
    user wait) and, where the card's datasheet is known, once again where a figure reads far
    below it. `not_cached`, where they must not be kept: another process used the GPU before or
    during the measurement, or a figure stayed far below the datasheet (a GPU shared with work
    rung cannot see, or held down): ceilings measured so would make every later honest kernel
    read faster than the GPU allows, check after check."""
    uuid = cuda_uuid()
    try:
        with gpu_lock.held(uuid, LOCK_WAIT_S):
            return _measured_alone(uuid)
    except gpu_lock.GpuBusy as e:
        return {**_measure_once(), "not_cached": str(e)}


def _measured_alone(uuid: str) -> dict[str, Any]:
    ours = {os.getpid()}
    before = gpu_facts.others_using(uuid, ours, idle_before=True)
    if before.get("busy") and not before.get("other_pids"):
        time.sleep(IDLE_WAIT_S)  # utilization looks back up to a second: this judge's own work, maybe
        before = gpu_facts.others_using(uuid, ours, idle_before=True)
    result = _measure_once()
    low = far_below_datasheet(result, torch.cuda.get_device_properties(0).name)
    if low:
        result = _measure_once()
        low = far_below_datasheet(result, torch.cuda.get_device_properties(0).name)
    during = gpu_facts.others_using(uuid, ours)
    why = [
        f"another process used the GPU {when} (pids {seen.get('other_pids')}, "
        f"utilization {seen.get('utilization_pct')}%)"
        for when, seen in (("before the measurement", before), ("during it", during))
        if seen.get("busy")
    ]
    if low:
        why.append(f"measured twice far below the datasheet: {low}")
    return {**result, "not_cached": "; ".join(why)} if why else result


def far_below_datasheet(ceilings: dict[str, Any], name: str) -> str:
    """The figures of `ceilings` under FAR_BELOW of the datasheet for GPU `name`, in words; ''
    where none is, or rung knows no datasheet for the GPU."""
    sheet = datasheet(name) or {}
    low = [
        f"{key} {float(ceilings[key]):.0f} of {sheet[key]:.0f}"
        for key, share in FAR_BELOW.items()
        if key in sheet and key in ceilings and float(ceilings[key]) < share * sheet[key]
    ]
    return ", ".join(low)


def _measure_once() -> dict[str, Any]:
    policy = Policy(warmup_s=0.3, min_samples=10, min_wall_s=0.2, target_rel_sem=0.005, max_s=5.0)
    flush = Flusher()
    result: dict[str, Any] = {"l2_bytes": flush.l2_bytes}
    result["dram_copy_gbps"] = _copy_gbps(policy, flush)
    result["dram_add_gbps"] = _add_gbps(policy, flush)
    result["dram_gbps"] = max(result["dram_copy_gbps"], result["dram_add_gbps"])
    clocks = Reading.start()
    for key, dtype, tf32 in (
        ("bf16_tensor_tflops", torch.bfloat16, False),
        ("fp16_tensor_tflops", torch.float16, False),
        ("tf32_tensor_tflops", torch.float32, True),
        ("fp32_matmul_tflops", torch.float32, False),
    ):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(MATMUL_N, MATMUL_N, device="cuda", dtype=dtype)
        b = torch.randn(MATMUL_N, MATMUL_N, device="cuda", dtype=dtype)
        t = timed(_matmul(a, b), policy, flush)
        result[key] = 2 * MATMUL_N**3 / (t["median_ms"] / 1e3) / 1e12
    torch.backends.cuda.matmul.allow_tf32 = False
    result["matmul_clock"] = clocks.result()
    out = torch.empty(2**24, device="cuda")
    block = 1024
    grid = (out.numel() // block,)
    fma = timed(lambda i: _fma_chains[grid](out, 0.999, 1e-3, ROUNDS=FMA_ROUNDS, BLOCK=block), policy, flush)
    result["fp32_vector_tflops"] = 2 * 4 * FMA_ROUNDS * out.numel() / (fma["median_ms"] / 1e3) / 1e12
    result.update(launch_floor(policy, flush))
    return result
