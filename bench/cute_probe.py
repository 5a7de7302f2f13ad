"""The shipped CuTe DSL matmul and softmax on a GPU, case by case against the problem's reference.

    python bench/cute_probe.py [--reps 10]

Each problem runs in a process of its own with CUDA_LAUNCH_BLOCKING=1, so a kernel fault (the
matmul's "illegal instruction" of 2026-12-05) is reported at the call that made it and does not
take the other problem down. Per case, TESTS then BENCHMARKS: PASS or FAIL against the problem's
reference and TOLERANCE (worst element: got, expected), the first call's seconds (the build
included where the solution builds), and the median of `--reps` timed calls in microseconds
(CUDA events around each call, host work included: launches are synchronous here), with TFLOP/s
or GB/s from the problem's cost. About 20 s on an H200; each problem is cut at 50 s. A case that
has not returned after `--stall` seconds prints every thread's Python stack and ends the process,
so a stuck build (a stack inside cute.compile) tells itself apart from a stuck kernel (a stack in
the synchronize after the call).

    python bench/cute_probe.py --problem softmax --case 37x1000     # one case, in this process
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib.util
import os
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ("matmul", "softmax")


def _load(path: Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _worst(got, ref, atol: float, rtol: float) -> tuple[bool, str]:
    import torch

    if got.shape != ref.shape:
        return False, f"shape {tuple(got.shape)}, expected {tuple(ref.shape)}"
    got, ref = got.double(), ref.double()
    excess = (got - ref).abs() - (atol + rtol * ref.abs())
    excess = torch.where(torch.isfinite(got), excess, torch.full_like(excess, float("inf")))
    i = int(excess.argmax())
    where = tuple(int(x) for x in torch.unravel_index(torch.tensor(i), got.shape))
    ok = bool(excess.max() <= 0)
    return ok, f"worst at {where}: {got.flatten()[i].item():.6g} vs {ref.flatten()[i].item():.6g}"


def probe(problem: str, reps: int, only: str | None = None, stall: float = 40.0) -> int:
    """Every case of one problem; 1 at the first failure (a fault leaves the context unusable)."""
    import cutlass
    import torch
    from cutlass.cutlass_dsl import CuTeDSL

    folder = ROOT / "problems" / problem
    spec = _load(folder / "problem.py", f"probe_{problem}")
    solution = _load(folder / "solutions" / "correct" / "cute.py", f"probe_{problem}_cute")
    arch = CuTeDSL._get_dsl().envar.arch
    print(f"{problem}: {torch.cuda.get_device_name()}, DSL arch {arch}, cutlass-dsl {cutlass.__version__}")
    tol = getattr(spec, "TOLERANCE", {"atol": 1e-5, "rtol": 1e-5})
    for kind, cases in (("test", spec.TESTS), ("bench", spec.BENCHMARKS)):
        for case in cases:
            if only and "x".join(str(v) for v in case.values()) != only:
                continue
            print(f"  {kind} {case}: started", flush=True)
            faulthandler.dump_traceback_later(stall, exit=True)
            inputs = spec.generate_input(seed=7, device="cuda", **case)
            ref = spec.reference(*inputs)
            t0 = time.perf_counter()
            try:
                got = solution.custom_kernel(*inputs)
                torch.cuda.synchronize()
            except Exception as e:  # the fault is the finding: say where and stop
                print(f"  {kind} {case}: FAIL at call: {type(e).__name__}: {str(e).splitlines()[0]}")
                return 1
            first_s = time.perf_counter() - t0
            faulthandler.cancel_dump_traceback_later()
            ok, worst = _worst(got, ref, tol["atol"], tol["rtol"])
            times_us = []
            for _ in range(reps):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                solution.custom_kernel(*inputs)
                end.record()
                end.synchronize()
                times_us.append(start.elapsed_time(end) * 1e3)
            median_us = statistics.median(times_us)
            cost = spec.cost(**case)
            rate = (
                f"{cost['flops'] / median_us / 1e6:.1f} TFLOP/s"
                if problem == "matmul"
                else f"{cost['bytes'] / median_us / 1e3:.0f} GB/s"
            )
            verdict = "PASS" if ok else "FAIL"
            print(
                f"  {kind} {case}: {verdict} ({worst}); first call {first_s:.2f} s; "
                f"median {median_us:.1f} us of {reps} ({rate})"
            )
            if not ok:
                return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--problem", choices=PROBLEMS, help="one problem, in this process")
    parser.add_argument("--case", help="with --problem: only the case whose values read so (37x1000)")
    parser.add_argument("--stall", type=float, default=40.0, help="seconds before a case's stacks are shown")
    args = parser.parse_args()
    if args.problem:
        return probe(args.problem, args.reps, args.case, args.stall)
    env = {**os.environ, "CUDA_LAUNCH_BLOCKING": "1"}
    failed = []
    for problem in PROBLEMS:
        command = [sys.executable, __file__, "--problem", problem, "--reps", str(args.reps)]
        try:
            rc = subprocess.run(command, env=env, timeout=50).returncode
        except subprocess.TimeoutExpired:
            print(f"{problem}: cut at 50 s")
            rc = 124
        if rc:
            failed.append(f"{problem} (exit {rc})")
    print("all PASS" if not failed else f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
