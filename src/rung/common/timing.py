"""Device timing you can trust: L2 flushed, queue kept full, events per call, adaptive stop.

Where the kernels launch (CUDA): the solution process for the solution, the judge for the
reference and the baseline. Every timed call is preceded, in the stream, by a write to a buffer twice
the L2's size (so no input or output stays cached) and by a short spin kernel longer than the
call's host-side overhead, so that when the start event fires the call is already queued: the
interval between the events is device time, not submission latency. Samples are taken in
batches with one synchronisation per batch, until there are at least `min_samples` samples and
`min_wall_s` of sampling, and the median's standard error (`rung.common.stats.median_sem`) is under
`target_rel_sem` of it, or until `max_s` has passed. The median is the figure reported, and the
stop is on how sure it is: calls the host now and then holds up give a heavy tail, which keeps the
mean's standard error high long after the median has settled. Warm-up is by time, so first-call
compilation and idle clocks stay out, and loads the device as sampling does, so its power draw
and clock are those it is sampled at.
Each batch begins with a longer spin (`lead_in_s`): after the synchronisation that ends a batch
the device is idle, and the host must queue several calls ahead before the first sample is taken.
Python's garbage collector is paused while samples are taken, as `timeit` does.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from rung import knobs
from rung.common.stats import summary

# Captured when rung's timing is imported, before any solution is: a solution that replaces
# these (on torch or on the Event class) does not change what rung measures with.
_perf_counter = time.perf_counter
_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed = torch.cuda.Event.elapsed_time
_synchronize = torch.cuda.synchronize
_sleep = torch.cuda._sleep

SPIN_HZ = 1.98e9  # cycles per second assumed to size the spin kernel; only needs to be roughly right


@dataclass(frozen=True)
class Policy:
    warmup_s: float
    min_samples: int
    min_wall_s: float
    target_rel_sem: float
    max_s: float
    lead_in_s: float = 5e-4
    pause_gc: bool = True

    @classmethod
    def from_knobs(cls) -> Policy:
        return cls(
            warmup_s=float(knobs.get("RUNG_BENCH_WARMUP_S")),
            min_samples=10,
            min_wall_s=0.1,
            target_rel_sem=float(knobs.get("RUNG_BENCH_REL_SEM")),
            max_s=float(knobs.get("RUNG_BENCH_MAX_S")),
        )


class Flusher:
    """Writes a buffer twice the size of the device's L2, then reads it back: the write evicts
    everything; the read makes what stays in L2 clean, so no write-back of the flush's own dirty
    lines lands inside the next timed call (measured on an H200: +7% on a 50 us copy without it)."""

    def __init__(self) -> None:
        props = torch.cuda.get_device_properties(0)
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
        self.buffer = torch.empty(2 * self.l2_bytes // 4, dtype=torch.int32, device="cuda")

    def __call__(self) -> None:
        self.buffer.zero_()
        self.buffer.max()


def timed(
    call: Callable[[int], Any], policy: Policy, flush: Flusher, after: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """Time `call(i)` (i counts calls, for rotating inputs); summary figures plus how it stopped,
    and the raw samples (`raw_ms`) with the sizes of the batches they were taken in (`batches`).
    `after(i)`, where given, runs right after sample i's end event is recorded (queued work there
    follows the call in the stream without being timed: the output checks of the timed calls)."""
    host_s = _warm_up(call, policy, flush)
    with _gc_paused() if policy.pause_gc else contextlib.nullcontext():
        return {**_sample(call, policy, flush, host_s, after), "host_overhead_ms": host_s * 1e3}


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    was = gc.isenabled()  # no collection first: a full one costs tens of ms with torch loaded
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _sample(
    call: Callable[[int], Any],
    policy: Policy,
    flush: Flusher,
    host_s: float,
    after: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    spin_cycles = _spin_cycles(host_s)
    lead_in_cycles = int(SPIN_HZ * policy.lead_in_s)
    samples: list[float] = []
    batches: list[int] = []
    start = _perf_counter()
    batch, i = 10, 0
    stop = "time cap"
    while True:
        events = [(_Event(enable_timing=True), _Event(enable_timing=True)) for _ in range(batch)]
        if lead_in_cycles:
            _sleep(lead_in_cycles)
        for begin, end in events:
            flush()
            _sleep(spin_cycles)
            _record(begin)
            call(i)
            _record(end)
            if after is not None:
                after(i)
            i += 1
        _synchronize()
        samples.extend(_elapsed(b, e) for b, e in events)
        batches.append(batch)
        s = summary(samples)
        wall = _perf_counter() - start
        if (
            len(samples) >= policy.min_samples
            and wall >= policy.min_wall_s
            and s["rel_median_sem"] < policy.target_rel_sem
        ):
            stop = "converged"
            break
        if wall >= policy.max_s:
            break
        per_sample = wall / len(samples)
        batch = max(1, min(1000, int(0.05 / per_sample)))
    return {**summary(samples), "stop": stop, "raw_ms": samples, "batches": batches}


def _warm_up(call: Callable[[int], Any], policy: Policy, flush: Flusher) -> float:
    """Three calls one at a time (first-call compilation, allocations), then calls taken the way
    samples are (flush, spin, call; a synchronisation per batch of up to 10) until
    `policy.warmup_s` of wall time have passed, so that the device draws the power and runs at the
    clock it will be sampled at: a matmul at the power cap slows as it loads the GPU, and calls
    synchronised one at a time do not load it. The median host-side time of a call."""
    host: list[float] = []
    walls: list[float] = []
    start = _perf_counter()
    for i in range(3):
        t = _perf_counter()
        host.append(_host_time(call, i))
        _synchronize()
        walls.append(_perf_counter() - t)
    per_call = max(sorted(walls)[1], 1e-6)
    i = 3
    while (left := policy.warmup_s - (_perf_counter() - start)) > 0:
        spin_cycles = _spin_cycles(sorted(host)[len(host) // 2])
        for _ in range(max(1, min(10, int(left / per_call)))):
            flush()
            _sleep(spin_cycles)
            host.append(_host_time(call, i))
            i += 1
        _synchronize()
    host.sort()
    return host[len(host) // 2]


def _host_time(call: Callable[[int], Any], i: int) -> float:
    t = _perf_counter()
    call(i)
    return _perf_counter() - t


def _spin_cycles(host_s: float) -> int:
    """A spin kernel twice a call's host-side time (20 us to 5 ms), so the call is queued before it ends."""
    return int(SPIN_HZ * min(max(2 * host_s, 20e-6), 5e-3))


def graph_timed(
    call: Callable[[int], Any],
    call_ms: float,
    policy: Policy,
    flush: Flusher,
    replay_ms: float = 0.1,
    checked: Callable[[int, list[Any]], None] | None = None,
) -> dict[str, Any]:
    """Per-call time over replays of a CUDA graph holding `calls_per_replay` calls back to back
    (rotating inputs), about `replay_ms` of work for a call of `call_ms`: the launch latency an
    event pair includes is paid once per replay and spread over the calls, so what is left is
    the device's own cost of a call, the front-end work between kernels included (nvbench's
    "batch" time). The L2 is flushed before each replay, not between the calls inside it.
    `checked(calls, outputs)`, where given, runs after the last replay with every captured call's
    output as that replay left it (held through the capture, so no call's memory is another's)."""
    calls = max(8, min(128, math.ceil(replay_ms / max(call_ms, 1e-4))))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call(0)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = [call(i) for i in range(calls)]
    replays = timed(lambda i: graph.replay(), policy, flush)
    if checked is not None:
        checked(calls, outputs)
    return {
        **summary([ms / calls for ms in replays["raw_ms"]]),
        "stop": replays["stop"],
        "calls_per_replay": calls,
    }


def plain_protocol(
    call: Callable[[int], Any], flush: Flusher, target_rel_sem: float, max_s: float
) -> dict[str, Any]:
    """What many harnesses do: events around each call after an L2 clear, sync every call, stop on SEM."""
    call(0)
    _synchronize()
    samples: list[float] = []
    start = _perf_counter()
    while _perf_counter() - start < max_s:
        flush()
        begin, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _record(begin)
        call(0)
        _record(end)
        _synchronize()
        samples.append(_elapsed(begin, end))
        if len(samples) >= 10 and summary(samples)["rel_sem"] < target_rel_sem:
            break
    return summary(samples)
