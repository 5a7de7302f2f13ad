"""What a bench case's figures say in words: its rung line, how its headline was taken, and the
notes where a figure depends on more than the kernel (input sets that read apart, a device idle
between kernels, other processes on the GPU)."""

from __future__ import annotations

from typing import Any

from rung.common.stats import relative_error
from rung.spec import BenchCase

SETS_APART, SETS_MIN_CALLS, SETS_MIN_US = 0.02, 3, 20.0  # when input sets that read apart are named
IDLE_SHARE, IDLE_MIN_US = 0.05, 2.0  # when a call's idle time between its kernels is named


def shared_gpu(clocks: list[dict[str, Any]]) -> list[int]:
    """The other processes NVML saw on the GPU while the case was timed (its readings' `others_on_gpu`)."""
    return sorted({p for c in clocks for p in (c.get("others_on_gpu") or {}).get("other_pids", [])})


def sets_apart(r: BenchCase) -> str:
    """Where a case's input sets read more than SETS_APART apart (each set's median span), that the
    figure depends on where its inputs lie: one process's mix of addresses is not another's, so
    the same kernel can read differently in the next check; '' where they agree or a set's
    median rests on too few calls to say."""
    per_set = r.get("per_set_median_ms") or []
    enough = int(r.get("samples", 0)) >= SETS_MIN_CALLS * len(per_set)
    if len(per_set) < 2 or not enough or r["median_ms"] * 1e3 < SETS_MIN_US:
        return ""
    low, high = min(per_set), max(per_set)
    apart = (high - low) / r["median_ms"]
    if apart <= SETS_APART:
        return ""
    return (
        f"{r['case']}: its {len(per_set)} input sets read {low * 1e3:.1f} to {high * 1e3:.1f} us "
        f"({apart * 100:.1f}% apart): the figure depends on where the inputs lie in memory, and a "
        "check in another process, with other addresses, can read otherwise; the median over all "
        "calls is the figure"
    )


def idle_between_kernels(r: BenchCase) -> str:
    """Where the device sat idle for IDLE_SHARE of a call's span or more (and IDLE_MIN_US), that
    the span holds time the device spent waiting on the host (a launch that came after the last
    kernel ended, a synchronisation), so the figure moves with the host's speed and load from one
    check to the next, and the busy time is the steadier reading of the kernels; '' otherwise."""
    gap_ms, busy_ms, span = r.get("gap_ms"), r.get("busy_ms"), r.get("cupti")
    if gap_ms is None or busy_ms is None or not span:
        return ""
    span_us, gap_us = span["median_ms"] * 1e3, gap_ms * 1e3
    if gap_us < IDLE_MIN_US or gap_us < IDLE_SHARE * span_us:
        return ""
    copies = f" and {r['copies_per_call']} copy/memset" if r.get("copies_per_call") else ""
    return (
        f"{r['case']}: the device sat idle {gap_us:.1f} us of the {span_us:.1f} us span between "
        f"the call's {r.get('kernels_per_call', '?')} kernel(s){copies} (busy {busy_ms * 1e3:.1f} us): the span "
        "includes time the device waited on the host (a late launch, a synchronisation), which "
        "moves with the host's load, so another check can read otherwise; the busy time is the "
        "kernels' steadier figure"
    )


def method(r: BenchCase) -> str:
    """How a case's headline figure was taken, in words: a figure is only comparable with one
    taken the same way (GPU MODE times events around each call, on one input set or fresh ones)."""
    how = "CUDA events around each call, its launch queued behind a spin (the profiler off)"
    inputs = "the same inputs every call" if r["input_sets"] == 1 else f"{r['input_sets']} input sets in turn"
    return f"{how}, median of {r['samples']} calls; L2 flushed before each; {inputs}"


def _kept(timing: dict[str, Any]) -> str:
    """Where a figure came from when it was not timed in this check."""
    return f" (timed {timing['kept']['measured_at']})" if "kept" in timing else ""


def case_line(r: BenchCase) -> str:
    parts = [
        f"{r['case']}: {r['median_ms'] * 1e3:.1f} us (±{relative_error(r) * 100:.2f}%, n={r['samples']})"
    ]
    if "achieved_gbps" in r:
        estimated = " (estimated cost)" if r.get("cost_estimated") else ""
        parts.append(f"{r['achieved_gbps']:.0f} GB/s {r['achieved_tflops']:.1f} TFLOP/s{estimated}")
    parts.append(
        f"x{r['speedup_vs_reference']:.2f}±{r['speedup_vs_reference_err']:.2f} vs reference{_kept(r['reference'])}"
    )
    if "speedup_vs_compile" in r:
        parts.append(f"x{r['speedup_vs_compile']:.2f} vs torch.compile{_kept(r['compile'])}")
    if "graph" in r and "median_ms" in r["graph"]:
        parts.append(f"graph {r['graph']['median_ms'] * 1e3:.1f} us")
    if r.get("shared_gpu"):
        parts.append(
            f"timed while other processes used the GPU (pids {', '.join(map(str, r['shared_gpu'][:5]))})"
        )
    if r.get("cupti"):
        copies = f" + {r['copies_per_call']} copy/memset" if r.get("copies_per_call") else ""
        parts.append(
            f"{r['kernels_per_call']} kernel(s){copies}, CUPTI span {r['cupti']['median_ms'] * 1e3:.1f} us"
        )
    else:
        parts.append(f"no CUPTI pass: {r.get('cupti_error', '')}")
    return "  " + "; ".join(parts)
