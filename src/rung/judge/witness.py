"""A witness for bench's figure: Nsight Compute's duration of the profiled call, measured in ncu's
own process, beyond the solution's reach.

bench's figure is the solution process's claim (its events, taken beside the solution's code: a
kernel that rewrote its process's timing results claimed 7.5 us where ncu measured 14.8). The
profile rung profiles one call of the last benchmark case, on that case's first input set, so
the sum of its kernels' `gpu__time_duration` is the same work bench timed. An honest headline
never reads much under it: bench's events include the call's launch and the gaps between its
kernels, which ncu leaves out, and ncu's duration of a kernel launched alone carries about 1 us
of its own (its cache flush among it). The band a figure may read under the witness is per size
class, from the fidelity table (docs/BENCHMARKS.md, H200, 2026-12-04: CUPTI's span, which reads
under the events figure bench reports now, against ncu): -40.6% at 1.3 us, -17.7% at 4 us,
-13.0% at 8 us, -11.1% at 10 us, -2.9% at 44 us, -1.4% at most from 127 us up; each band holds
the worst honest reading with room. Data-model code only (no torch): the optimize loop holds a
candidate's figure against its profile climb's duration with the same bands (`rung.chosen`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rung.spec import RungResult, Status

# (the witness's duration from, in us; how far under it bench's figure may read)
BANDS = ((50.0, 0.05), (20.0, 0.08), (10.0, 0.20), (0.0, 0.50))


def band(witness_us: float) -> float:
    return next(share for floor, share in BANDS if witness_us >= floor)


def compare(bench_ms: float | None, kernels: list[dict[str, Any]], case: Any) -> dict[str, Any]:
    """The witness of one case: `witnessed` (bench's figure within its band of ncu's), `contradicted`
    (faster than ncu allows: the verdict FAILS), or `unwitnessed` where there is nothing to compare
    (bench did not time this case in this judge, or ncu measured no duration)."""
    ncu_us = sum(float(k.get("total_us", 0.0)) for k in kernels)
    if bench_ms is None or ncu_us <= 0:
        return {"case": case, "verdict": "unwitnessed"}
    bench_us, allowed = bench_ms * 1e3, band(ncu_us)
    under = 1 - bench_us / ncu_us
    return {
        "case": case,
        "bench_us": round(bench_us, 3),
        "ncu_us": round(ncu_us, 3),
        "under_witness": round(under, 4),
        "band": allowed,
        "verdict": "contradicted" if under > allowed else "witnessed",
    }


def message(w: dict[str, Any]) -> str:
    return (
        f"bench's figure for case {w['case']}, {w['bench_us']:.1f} us, reads {w['under_witness']:.0%} under "
        f"Nsight Compute's {w['ncu_us']:.1f} us for the same call, measured outside the solution's process "
        f"(honest calls of this size read at most {w['band']:.0%} under it): the timing was forged, or the "
        "solution does less work while bench times it than while ncu profiles it"
    )


def judged(result: RungResult, bench_ms: float | None, case: Any) -> RungResult:
    """The profile rung's result with its witness of bench's figure (`metrics["witness"]`); FAILED,
    saying why, where bench's figure is contradicted."""
    if result.status != Status.OK:
        return result
    w = compare(bench_ms, result.metrics.get("kernels") or [], case)
    metrics = {**result.metrics, "witness": w}
    if w["verdict"] != "contradicted":
        return dataclasses.replace(result, metrics=metrics)
    return dataclasses.replace(
        result, status=Status.FAILED, message=f"{message(w)}\n{result.message}", metrics=metrics
    )
