"""Fidelity of rung's timing against Nsight Compute, do_bench and the plain protocol (GPU only).

    python bench/fidelity.py --out results/fidelity.json            # everything, ncu included
    python bench/fidelity.py --target NAME --launches N             # (ncu child) N launches of NAME

For each kernel: rung's median (the bench rung's protocol, `rung.common.timing.timed`), its spread over
5 repeated measurements (with the SM clock NVML read during each), the CUDA-graph figure,
`triton.testing.do_bench(return_mode="median")`, the plain protocol (events around each call
after an L2 clear, stop at SEM < 0.1% of the mean), and Nsight Compute's
`gpu__time_duration.sum` (median of the launches profiled inside an NVTX range,
`--clock-control none`, ncu's own cache flush between launches).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rung.common.loader import import_file  # noqa: E402
from rung.common.measure import measure as rung_measure  # noqa: E402
from rung.common.timing import Flusher, Policy, graph_timed, plain_protocol  # noqa: E402
from rung.judge.clocks import Reading  # noqa: E402
from rung.judge.rungs.bench_sizes import rotation  # noqa: E402
from rung.solution.profiler_warmup import ProfilerWarmup  # noqa: E402

NVTX = "rung_target"


Target = Callable[[], Callable[[int], Any]]  # builds a call of the kernel; call(i) uses input set i mod n


def rotating(fn: Callable[..., Any], make_inputs: Callable[[int], tuple[Any, ...]]) -> Callable[[int], Any]:
    """Input sets at distinct addresses, as many as the bench rung rotates through for this size."""
    first = make_inputs(0)
    sets = [first] + [make_inputs(k) for k in range(1, rotation(first))]
    return lambda i: fn(*sets[i % len(sets)])


def problem_call(problem: str, solution: str, case: dict[str, Any]) -> Callable[[int], Any]:
    """An example's correct `solution` on `case`, its inputs rotating as the bench rung rotates them."""
    folder = ROOT / "problems" / problem
    p = import_file(folder / "problem.py", f"fid_{problem}")
    fn = import_file(folder / "solutions" / "correct" / solution, f"fid_{problem}_{solution}").custom_kernel
    return rotating(fn, lambda k: p.generate_input(seed=1 + k, device="cuda", **case))


def _problem_targets(problem: str, solution: str) -> list[tuple[str, Target]]:
    folder = ROOT / "problems" / problem
    out: list[tuple[str, Target]] = []
    if not (folder / "problem.py").is_file():
        return out
    for case in import_file(folder / "problem.py", f"fid_{problem}").BENCHMARKS:

        def make(case: dict[str, Any] = case) -> Callable[[int], Any]:
            return problem_call(problem, solution, case)

        out.append((f"{problem}/{solution} {case}", make))
    return out


def targets() -> list[tuple[str, Target]]:
    va = import_file(
        ROOT / "problems" / "vector_add" / "solutions" / "correct" / "tuned.py", "fid_va"
    ).custom_kernel
    out: list[tuple[str, Target]] = []
    for log2 in (12, 16, 20, 24, 28):

        def make(n: int = 2**log2) -> Callable[[int], Any]:
            return rotating(va, lambda k: (torch.randn(n, device="cuda"), torch.randn(n, device="cuda")))

        out.append((f"vector_add 2^{log2}", make))
    out += _problem_targets("softmax", "tuned.py") + _problem_targets("layer_norm", "tuned.py")

    def matmul() -> Callable[[int], Any]:
        def inputs(k: int) -> tuple[Any, ...]:
            return tuple(torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) for _ in range(2))

        return rotating(torch.matmul, inputs)

    out.append(("torch bf16 matmul 4096^3", matmul))
    return out


def child(name: str, launches: int) -> None:
    """Under ncu: warm up outside the NVTX range, then `launches` calls inside it."""
    make = dict(targets())[name]
    call = make()
    for i in range(5):
        call(i)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(NVTX)
    for i in range(launches):
        call(i)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def ncu_median_ms(name: str, launches: int = 5, cache_control: str = "all") -> dict[str, Any]:
    """ncu's duration of `name`, the median over `launches` calls; `cache_control` "all" flushes
    the caches before each profiled launch (ncu's default), "none" leaves them as they are."""
    exe = shutil.which("ncu")
    if exe is None:
        return {"error": "ncu not found"}
    cmd = [
        exe,
        "--clock-control",
        "none",
        "--cache-control",
        cache_control,
        "--metrics",
        "gpu__time_duration.sum",
        "--csv",
        "--page",
        "raw",
        "--nvtx",
        "--nvtx-include",
        f"{NVTX}/",
        sys.executable,
        __file__,
        "--target",
        name,
        "--launches",
        str(launches),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    rows = [r for r in csv.reader(io.StringIO(done.stdout)) if r]
    header = next((i for i, r in enumerate(rows) if "gpu__time_duration.sum" in r), None)
    if header is None:
        return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]}
    col = rows[header].index("gpu__time_duration.sum")
    unit = rows[header + 1][col]
    # Time units as ncu spells them (nsecond, usecond, msecond, second, or short forms), to ms.
    u = unit.strip().lower()
    prefixes = (("n", 1e-6), ("u", 1e-3), ("µ", 1e-3), ("m", 1.0), ("s", 1e3))
    factor = next((f for prefix, f in prefixes if u.startswith(prefix)), None)
    if factor is None:
        return {"error": f"unknown unit {unit!r}", "raw": rows[header : header + 3]}
    kernel_col = rows[header].index("Kernel Name") if "Kernel Name" in rows[header] else None
    # Several kernels per call are summed per call (launch order is stable).
    values = [float(r[col].replace(",", "")) * factor for r in rows[header + 2 :] if r[col].strip()]
    per_call = len(values) // launches if launches and len(values) >= launches else 1
    calls = [sum(values[i * per_call : (i + 1) * per_call]) for i in range(len(values) // per_call)]
    kernels = sorted({r[kernel_col] for r in rows[header + 2 :]}) if kernel_col is not None else []
    return {
        "median_ms": statistics.median(calls),
        "launches": len(calls),
        "kernels_per_call": per_call,
        "kernels": kernels[:3],
    }


def measure(name: str, make: Target, with_ncu: bool) -> dict[str, Any]:
    import triton

    call = make()
    policy, flush = Policy.from_knobs(), Flusher()
    trace = Path(tempfile.mkdtemp()) / "trace.json"
    repeats, walls, clocks = [], [], []
    for _ in range(5):
        start = time.perf_counter()
        reading = Reading.start()  # the SM clock while this repeat runs (a power-capped matmul steps)
        repeats.append(rung_measure(call, policy, flush, trace))
        walls.append(time.perf_counter() - start)
        clocks.append(reading.result().get("sm_mhz"))
    medians = [r["median_ms"] for r in repeats]
    row: dict[str, Any] = {
        "target": name,
        "rung_median_ms": medians[0],
        "rung_timing": repeats[0]["timing"],
        "rung_cupti_median_ms": repeats[0].get("cupti", {}).get("median_ms"),  # the headline is events
        "rung_rel_sem": repeats[0]["rel_sem"],
        "rung_rel_median_sem": repeats[0].get("rel_median_sem"),  # what rung stops on
        "rung_samples": repeats[0]["samples"],
        "rung_medians_ms": medians,
        "rung_cupti_medians_ms": [r.get("cupti", {}).get("median_ms") for r in repeats],
        "rung_spread": max(medians) / min(medians) - 1,
        "rung_sm_mhz": clocks,
        "do_bench_median_ms": float(triton.testing.do_bench(lambda: call(0), return_mode="median")),
    }
    row["rung_wall_s"] = statistics.median(walls)  # one measurement: warm-up, events, CUPTI pass
    start = time.perf_counter()
    plain = plain_protocol(call, flush, target_rel_sem=0.001, max_s=3.0)
    row["plain_median_ms"], row["plain_samples"] = plain["median_ms"], plain["samples"]
    row["plain_wall_s"] = time.perf_counter() - start
    start = time.perf_counter()  # the plain protocol at rung's own precision target, for time to verdict
    same = plain_protocol(call, flush, target_rel_sem=policy.target_rel_sem, max_s=3.0)
    row["plain_same_sem_wall_s"], row["plain_same_sem_median_ms"] = (
        time.perf_counter() - start,
        same["median_ms"],
    )
    if medians[0] < 0.05:
        graph = graph_timed(call, medians[0], policy, flush)
        row["graph_median_ms"], row["graph_calls_per_replay"] = graph["median_ms"], graph["calls_per_replay"]
    if with_ncu:
        ncu = ncu_median_ms(name)
        row["ncu"] = ncu
        if "median_ms" in ncu:
            row["rung_vs_ncu"] = medians[0] / ncu["median_ms"] - 1
            if "graph_median_ms" in row:
                row["graph_vs_ncu"] = row["graph_median_ms"] / ncu["median_ms"] - 1
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--target")
    ap.add_argument("--launches", type=int, default=7)
    ap.add_argument("--no-ncu", action="store_true")
    ap.add_argument("--only", default="", help="measure only targets whose name contains this")
    args = ap.parse_args()
    if args.target:
        child(args.target, args.launches)
        return
    # CUPTI's first use in a process costs most of a second; a worker pays it at start, in the
    # background, and so does this script, so the first target's first CUPTI pass does not follow
    # a second of idle GPU.
    warmup = ProfilerWarmup().wait()
    rows = []
    for name, make in targets():
        if args.only not in name:
            continue
        row = measure(name, make, with_ncu=not args.no_ncu)
        rows.append(row)
        print(json.dumps(row), flush=True)
    doc = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "rows": rows,
        "profiler_warmup": warmup,
        "env": {k: v for k, v in os.environ.items() if k.startswith("RUNG_")},
    }
    if args.out:
        args.out.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
