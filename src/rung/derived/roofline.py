"""roofline: how far each benchmark case is from the time the hardware allows (controller side).

attainable = max(flops / compute ceiling, bytes / DRAM bandwidth), from the problem's cost model
and the device's measured ceilings; percent of roofline = attainable / measured median. The
compute ceiling is the one the case's FLOPs run against (`math`: fp32_vector, tf32_tensor,
fp16_tensor, bf16_tensor; the cost model may name it, else the first floating input's dtype
decides). A case can beat its memory time a little without a wrong cost model: the bytes it
writes may still sit in the L2 when its last kernel ends, and a mid-sized stream (a 2^24-element
add, 201 MB) read 105% of the DRAM ceiling on an H200. So the plausibility floor counts at DRAM
speed only the bytes that must come from DRAM: those past the L2 (`l2_bytes`, from `rung device`),
and at least the case's inputs (`input_bytes`, up to the cost model's bytes), which bench's L2
flush before every call evicted, so that a problem smaller than the L2 has a floor too. Peaks are
the datasheet's where rung knows the GPU (`rung.common.ceilings_datasheet`). A case measured faster than
that floor (beyond 3 standard errors) is FAILED as physically impossible, naming a forged timing
or a wrong cost model.

A problem without a cost model gets one estimated by the judge (judge/estimate.py: FLOPs counted
from the reference, bytes as inputs plus outputs), labelled "estimated" on every line and in the
figures; as an estimate may overcount what a kernel must move, a case faster than its floor is
said to be so, not FAILED. A small case reads against the launch floor too (`launch_us`, from
`rung device`: an empty kernel timed as bench times a solution): attainable = max(compute time,
memory time, launch floor), and a case held by the floor says "bound by launch".
"""

from __future__ import annotations

from typing import Any

from rung import knobs
from rung.common.ceilings_datasheet import datasheet
from rung.common.stats import geomean, relative_error
from rung.spec import BenchCase, Device, RooflineCase, RungResult, Status

ESTIMATED = "estimated: FLOPs counted from the reference (FlopCounterMode), bytes = inputs + outputs"
UNKNOWN_PEAK_OVER_MEASURED = 1.10  # where no datasheet is known: the H200's is 9.6% over its measured copy
MIN_SLACK = 0.01  # never closer than 1%: the floor's own figures are rounded


def roofline(results: dict[str, RungResult], device: Device) -> RungResult:
    bench = results["bench"]
    target = float(knobs.get("RUNG_ROOFLINE_TARGET"))
    cases: list[BenchCase] = bench.metrics.get("cases", [])
    if not cases or any("bytes" not in c for c in cases):
        return RungResult(
            "roofline", Status.SKIPPED, "no cost model, and none could be estimated from the reference"
        )
    if "dram_gbps" not in device.ceilings:
        return RungResult("roofline", Status.SKIPPED, "the device's ceilings were not measured (rung device)")
    peak = physical_limit(device)
    rows = [_case(c, device.ceilings, peak) for c in cases]
    metrics: dict[str, Any] = {"cases": rows, "target": target, "ceilings": device.ceilings, "peak": peak}
    impossible = [r for r in rows if r["faster_than_floor"] and r["cost"] == "problem"]
    if impossible:
        r = impossible[0]
        return RungResult(
            "roofline",
            Status.FAILED,
            f"physically impossible: case {r['case']} measured {r['measured_ms'] * 1e3:.1f} us, faster than the "
            f"{r['floor_ms'] * 1e3:.1f} us the {peak['source']} peak allows for its cost model, counting only "
            f"the {r['dram_floor_bytes']} bytes that must come from DRAM (its inputs, which the L2 flush "
            f"before each call evicted, or what the L2 cannot hold) ({r['pct_of_roofline']:.0%} of roofline). Either the timing "
            f"is forged or the cost model is wrong (likely a cost-model error for an honest kernel: "
            f"bytes={r['bytes']}, flops={r['flops']})",
            metrics,
        )
    metrics["pct_of_roofline"] = geomean([r["pct_of_roofline"] for r in rows])
    metrics["min_pct_of_roofline"] = min(r["pct_of_roofline"] for r in rows)
    at = all(r["pct_of_roofline"] >= target for r in rows)
    lines = "\n".join(_line(r) for r in rows)
    verdict = "at roofline" if at else f"below {target:.0%} of roofline"
    if any(r["cost"] == "estimated" for r in rows):
        metrics["cost"] = "estimated"
        verdict += f"; cost {ESTIMATED}"
    return RungResult(
        "roofline",
        Status.OK,
        f"{verdict} (worst case {metrics['min_pct_of_roofline']:.0%})\n{lines}",
        metrics,
    )


def _line(r: RooflineCase) -> str:
    bound = (
        f"bound by launch: {r['launch_ms'] * 1e3:.1f} us floor"
        if r["bound"] == "launch"
        else f"{r['bound']}-bound, attainable {r['attainable_ms'] * 1e3:.1f} us"
    )
    line = f"  {r['case']}: {r['pct_of_roofline']:.0%} of roofline ({bound}, measured {r['measured_ms'] * 1e3:.1f} us)"
    if r["cost"] == "estimated":
        line += " [estimated cost]"
        if r["faster_than_floor"]:
            line += ": faster than the estimate allows, so the estimate overcounts the work this case needs"
    return line


def physical_limit(device: Device) -> dict[str, Any]:
    """The GPU's peaks: its datasheet's where rung knows the model, else the measured ceilings
    raised by UNKNOWN_PEAK_OVER_MEASURED."""
    sheet = datasheet(device.name)
    if sheet is not None:
        return {"source": f"{device.name} datasheet", **sheet}
    scaled = {
        k: float(v) * UNKNOWN_PEAK_OVER_MEASURED
        for k, v in device.ceilings.items()
        if k.endswith(("_gbps", "_tflops"))
    }
    return {"source": f"measured ceilings x{UNKNOWN_PEAK_OVER_MEASURED:g}", **scaled}


def _case(c: BenchCase, ceilings: dict[str, Any], peak: dict[str, Any]) -> RooflineCase:
    math_key = f"{c.get('math') or 'fp32_vector'}_tflops"
    tflops = float(ceilings.get(math_key) or ceilings["fp32_vector_tflops"])
    t_compute = c["flops"] / (tflops * 1e12) * 1e3
    bandwidth = float(ceilings["dram_gbps"]) * 1e9
    t_memory = c["bytes"] / bandwidth * 1e3
    l2 = int(ceilings.get("l2_bytes", 0))
    launch = _launch_ms(c, ceilings)
    attainable = max(t_compute, t_memory, launch)
    peak_tflops = float(peak.get(math_key) or peak.get("fp32_vector_tflops") or tflops)
    peak_bandwidth = float(peak.get("dram_gbps") or ceilings["dram_gbps"]) * 1e9
    dram_bytes = dram_floor_bytes(c, l2)
    floor = max(c["flops"] / (peak_tflops * 1e12), dram_bytes / peak_bandwidth) * 1e3
    slack = max(3 * relative_error(c), MIN_SLACK)
    return {
        "case": c["case"],
        "flops": c["flops"],
        "bytes": c["bytes"],
        "ceiling": math_key,
        "compute_ms": t_compute,
        "memory_ms": t_memory,
        "attainable_ms": attainable,
        "l2_bytes": l2,
        "dram_floor_bytes": dram_bytes,
        "floor_ms": floor,
        "slack": slack,
        "faster_than_floor": c["median_ms"] < floor * (1 - slack),
        "launch_ms": launch,
        "measured_ms": c["median_ms"],
        "pct_of_roofline": attainable / c["median_ms"],
        "bound": "launch"
        if launch > max(t_compute, t_memory)
        else "memory"
        if t_memory >= t_compute
        else "compute",
        "cost": "estimated" if c.get("cost_estimated") else "problem",
    }


def dram_floor_bytes(c: BenchCase, l2_bytes: int) -> int:
    """The bytes of a case that must cross DRAM in every timed call: what the L2 cannot hold, and
    at least its inputs (bench flushes the L2 before each call, so they start in DRAM), counted
    only up to the cost model's bytes (a kernel may need less than all of its inputs)."""
    moved = int(c["bytes"])
    return max(moved - l2_bytes, min(moved, int(c.get("input_bytes", 0))), 0)


def _launch_ms(c: BenchCase, ceilings: dict[str, Any]) -> float:
    """The launch floor for how this case was timed: an empty kernel's CUPTI span where bench's
    figure is CUPTI's, its event time where bench fell back to events; 0 where not measured."""
    key = "launch_us" if c.get("timing", "cupti") == "cupti" else "launch_events_us"
    return float(ceilings.get(key, 0.0)) / 1e3
