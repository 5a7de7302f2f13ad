"""profile: reading Nsight Compute's figures for the kernels of one call of the largest benchmark case.

The judge runs the solution in a confined process of its own (`rung.solution.profile_target`, on
inputs the judge drew and saved) under `ncu --clock-control none`, which profiles only the
kernels inside the call's NVTX range (`rung.judge.rungs.profile`); this module turns what ncu
wrote into the rung's result. Per kernel, hottest first: its time, the Speed Of Light figures
(SM and memory throughput as a percent of peak, DRAM throughput and bytes, L2 hit rate),
achieved occupancy, registers and launch shape; and one plain reading for a person or an agent:
memory-bound, compute-bound, or latency-bound (neither above LATENCY_BOUND_BELOW percent of
peak: too little work in flight, or stalls). ncu's CSV and the program's output are kept.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from rung import ncu
from rung.spec import RungResult, Status

PROFILER_REFUSED = ("Failed to profile", "Failed to initialize the profiler")  # ncu's words, on an H200
LATENCY_BOUND_BELOW = 60.0  # percent of peak, SM and memory both
TAIL_LINES = 6


def interpret(log: Path, target_log: Path, code: int | None, seconds: float, timeout_s: float) -> RungResult:
    """The profile rung's result from what ncu wrote (`log`) and what the target said."""
    if code is None:
        return RungResult(
            "profile", Status.TIMEOUT, f"ncu still running after {timeout_s:g} s; killed", seconds=timeout_s
        )
    text = log.read_text(errors="replace") if log.exists() else ""
    artifacts = [str(p) for p in (log, target_log) if p.exists()]
    launches = ncu.parse(text)
    if not launches:
        said = _tail(text) + _tail(target_log.read_text(errors="replace") if target_log.exists() else "")
        if any("ERR_NVGPUCTRPERM" in line for line in said):
            return RungResult(
                "profile",
                Status.SKIPPED,
                "ncu may not read this GPU's performance counters here (ERR_NVGPUCTRPERM)",
                {"said": said},
                artifacts,
                seconds,
            )
        refused = next((ln for ln in said if any(m in ln for m in PROFILER_REFUSED)), "")
        if refused:  # ncu's own failure to attach, not the solution's: nothing measured, said so
            return RungResult(
                "profile",
                Status.SKIPPED,
                f"Nsight Compute could not profile the confined solution process: {refused}",
                {"said": said},
                artifacts,
                seconds,
            )
        why = f"the profiled call failed (exit code {code})" if code else "ncu profiled no kernel in the call"
        return RungResult(
            "profile", Status.ERROR, f"{why}: {said[-1] if said else ''}", {"said": said}, artifacts, seconds
        )
    kernels = summarize(launches)
    lines = [_line(k) for k in kernels[:3]]
    more = f"\n  ... {len(kernels) - 3} more kernel(s) in {log}" if len(kernels) > 3 else ""
    return RungResult(
        "profile",
        Status.OK,
        f"{len(launches)} launch(es) of {len(kernels)} kernel(s) in one call of the last benchmark case, "
        f"hottest first\n" + "\n".join(lines) + more,
        {"kernels": kernels, "launches": len(launches)},
        artifacts,
        seconds,
    )


def summarize(launches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per kernel name, hottest (most total time) first: launches, total and median time, and the
    medians of every other figure over its launches, with the reading."""
    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for launch in launches:
        by_name[str(launch["kernel"])].append(launch)
    kernels = []
    for name, group in by_name.items():
        k: dict[str, Any] = {"name": name, "launches": len(group)}
        for key in ncu.METRICS:
            values = [g[key] for g in group if g.get(key) is not None]
            if values:
                k[key] = statistics.median(values)
        durations = [g["duration_ns"] for g in group if g.get("duration_ns") is not None]
        k["total_us"] = sum(durations) / 1e3
        moved = k.get("dram_read_bytes", 0) + k.get("dram_write_bytes", 0)
        if k.get("duration_ns"):
            k["dram_gbps"] = moved / k["duration_ns"]  # bytes per ns = GB/s
        k["reading"] = reading(k.get("sm_pct"), k.get("memory_pct"))
        kernels.append(k)
    return sorted(kernels, key=lambda k: -k["total_us"])


def reading(sm_pct: float | None, memory_pct: float | None) -> str:
    if sm_pct is None or memory_pct is None:
        return "no Speed Of Light figures"
    if max(sm_pct, memory_pct) < LATENCY_BOUND_BELOW:
        return (
            f"latency-bound: SM {sm_pct:.0f}% and memory {memory_pct:.0f}% of peak "
            "(too little work in flight, or stalls)"
        )
    if memory_pct >= sm_pct:
        return f"memory-bound: memory {memory_pct:.0f}% of peak, SM {sm_pct:.0f}%"
    return f"compute-bound: SM {sm_pct:.0f}% of peak, memory {memory_pct:.0f}%"


def _line(k: dict[str, Any]) -> str:
    figures = [f"{k.get('duration_ns', 0) / 1e3:.1f} us x{k['launches']}", k["reading"]]
    if "dram_gbps" in k:
        figures.append(f"DRAM {k['dram_gbps']:.0f} GB/s")
    for key, label in (("l2_hit_pct", "L2 hit"), ("occupancy_pct", "occupancy")):
        if key in k:
            figures.append(f"{label} {k[key]:.0f}%")
    if "registers" in k:
        figures.append(f"{k['registers']:.0f} regs")
    return f"  {k['name'][:70]}: " + "; ".join(figures)


def _tail(text: str) -> list[str]:
    return [ln.strip() for ln in text.strip().splitlines() if ln.strip()][-TAIL_LINES:]
