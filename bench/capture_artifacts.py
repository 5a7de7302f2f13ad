"""Raw artifacts of the GPU tools, captured once on a GPU for CPU tests to parse as fixtures.

- `ncu/`: a full Nsight Compute report (`--set full --import-source yes`) of the example's tuned
  softmax at 8192 x 8192, and everything ncu's own `ncu_report` module reads from it, as JSON:
  per kernel every metric (name, value, unit, type) and the rule results ncu fires;
- `proton/`: Triton's proton in instrumentation mode on a tiled matmul whose main loop and
  epilogue are marked with `enter_scope`/`exit_scope`, as a Chrome trace and as proton's tree;
- `profiler/`: the CUPTI traces (torch.profiler's Chrome trace) bench took of the tuned softmax in
  a `rung check`, one per benchmark case, gzipped: what the trace rung reads;
- `versions.json`: the tools' versions.

  python3 bench/capture_artifacts.py --out DIR [--only profiler,proton,ncu]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RANGE = "capture"


def softmax_target() -> None:
    """Runs under ncu: the tuned softmax once for warm-up, then once inside the NVTX range."""
    import torch

    spec = importlib.util.spec_from_file_location(
        "tuned", ROOT / "problems/softmax/solutions/correct/tuned.py"
    )
    assert spec and spec.loader
    tuned = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tuned)
    x = torch.randn(8192, 8192, device="cuda")
    tuned.custom_kernel(x)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(RANGE)
    tuned.custom_kernel(x)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def capture_ncu(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    exe = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    rep = out / "softmax_full"
    cmd = [exe, "--clock-control", "none", "--set", "full", "--import-source", "yes", "--nvtx"]
    cmd += ["--nvtx-include", f"{RANGE}/", "-f", "-o", str(rep), sys.executable, __file__, "--target"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False)
    (out / "ncu.log").write_text(done.stdout + done.stderr)
    print("ncu exit", done.returncode)
    # exported exactly as the profile rung exports a report, by ncu's own module
    from rung.common import ncu

    export = [sys.executable, "-m", "rung.judge.ncu_export", str(rep.with_suffix(".ncu-rep"))]
    export += [str(out / "softmax_full.json"), *map(str, ncu.python_module_dirs(exe))]
    done = subprocess.run(export, capture_output=True, text=True, timeout=600, check=False)
    print("ncu_export exit", done.returncode, done.stderr[-500:])


def capture_proton(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    import torch
    import triton
    import triton.language as tl
    import triton.profiler as proton
    import triton.profiler.language as pl

    pl.enable_semantic("triton")

    @triton.jit
    def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        pl.enter_scope("main_loop")
        for k in range(0, K, BK):
            x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
            y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
            acc = tl.dot(x, y, acc)
        pl.exit_scope("main_loop")
        pl.enter_scope("epilogue")
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))
        pl.exit_scope("epilogue")

    n = 4096
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    grid = (n // 128, n // 128)
    for data in ("trace", "tree"):
        try:
            name = str(out / f"matmul_{data}")
            proton.start(name, backend="instrumentation", data=data)
            matmul[grid](a, b, c, n, n, n, BM=128, BN=128, BK=64, num_warps=8)
            torch.cuda.synchronize()
            proton.finalize()
        except Exception:
            (out / f"matmul_{data}.error.txt").write_text(traceback.format_exc())
    print("proton:", sorted(p.name for p in out.iterdir()))


def capture_profiler(out: Path) -> None:
    """A `rung check` of the tuned softmax (profile and scopes left out), and its bench traces."""
    import gzip
    import tempfile

    out.mkdir(parents=True, exist_ok=True)
    problem = ROOT / "problems" / "softmax"
    with tempfile.TemporaryDirectory(prefix="rung-capture-") as tmp:
        env = {**os.environ, "RUNG_WORKSPACE": tmp, "RUNG_SKIP": "profile,scopes", "RUNG_BASELINE": "none"}
        cmd = [
            sys.executable,
            "-m",
            "rung",
            "check",
            str(problem),
            str(problem / "solutions/correct/tuned.py"),
        ]
        subprocess.run([*cmd, "--json"], env=env, check=True, capture_output=True, timeout=600)
        for trace in sorted(Path(tmp).glob(".rung/runs/*/solution/bench/case*.trace.json")):
            (out / f"softmax_{trace.name}.gz").write_bytes(gzip.compress(trace.read_bytes()))
    print("profiler:", sorted(p.name for p in out.iterdir()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    parser.add_argument("--target", action="store_true", help="(internal) the process ncu profiles")
    parser.add_argument("--only", default="proton,ncu,profiler", help="which captures, comma-separated")
    args = parser.parse_args()
    if args.target:
        softmax_target()
        return
    args.out.mkdir(parents=True, exist_ok=True)
    import torch
    import triton

    versions = {"torch": torch.__version__, "triton": triton.__version__, "gpu": torch.cuda.get_device_name()}
    (args.out / "versions.json").write_text(json.dumps(versions))
    for what, fn in (("proton", capture_proton), ("ncu", capture_ncu), ("profiler", capture_profiler)):
        if what not in args.only.split(","):
            continue
        try:
            fn(args.out / what)
        except Exception:
            (args.out / f"{what}.error.txt").write_text(traceback.format_exc())
            print(f"{what} failed:", traceback.format_exc()[-600:])
    os.sync()


if __name__ == "__main__":
    main()
