"""Raw artifacts of the GPU tools, captured once on a GPU for CPU tests to parse as fixtures.

- `ncu/`: a full Nsight Compute report (`--set full --import-source yes`) of the example's tuned
  softmax at 8192 x 8192, and everything ncu's own `ncu_report` module reads from it, as JSON:
  per kernel every metric (name, value, unit, type) and the rule results ncu fires;
- `proton/`: Triton's proton in instrumentation mode on a tiled matmul whose main loop and
  epilogue are marked with `enter_scope`/`exit_scope`, as a Chrome trace and as proton's tree;
- `versions.json`: the tools' versions.

  python3 bench/capture_artifacts.py --out DIR
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

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


def ncu_report_module() -> Any:
    """ncu's Python module, from the real install (the `ncu` on PATH may be the toolkit's wrapper)."""
    roots = sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"))
    roots += sorted(glob.glob("/usr/local/cuda*/nsight-compute*/extras/python"))
    for root in roots:
        if (Path(root) / "ncu_report.py").exists():
            sys.path.insert(0, root)
            import ncu_report  # type: ignore[import-not-found]

            return ncu_report, root
    raise RuntimeError(f"no ncu_report.py under {roots}")


def _metric(m: Any) -> dict[str, Any]:
    kind = str(m.metric_type())
    out: dict[str, Any] = {"type": kind, "unit": m.unit(), "subtype": str(m.metric_subtype())}
    try:
        if m.num_instances() > 0:
            out["instances"] = m.num_instances()
        vk = str(m.kind())
        out["kind"] = vk
        if "STRING" in vk:
            out["value"] = m.as_string()
        elif "FLOAT" in vk or "DOUBLE" in vk:
            out["value"] = m.as_double()
        else:
            out["value"] = m.as_uint64()
    except Exception as e:
        out["error"] = repr(e)
    return out


def dump_report(path: Path, out: Path) -> None:
    ncu_report, root = ncu_report_module()
    (out / "ncu_report_api.txt").write_text(
        "\n".join(
            f"{n}: {[a for a in dir(getattr(ncu_report, n)) if not a.startswith('_')]}"
            for n in dir(ncu_report)
        )
    )
    ctx = ncu_report.load_report(str(path))
    kernels = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            kernel: dict[str, Any] = {"name": action.name(), "metrics": {}}
            for name in action.metric_names():
                kernel["metrics"][name] = _metric(action.metric_by_name(name))
            for attr in ("rule_results_as_dicts", "rule_results"):
                if hasattr(action, attr):
                    try:
                        got = getattr(action, attr)()
                        kernel[attr] = got if attr.endswith("dicts") else [str(x) for x in got]
                    except Exception as e:
                        kernel[attr + "_error"] = repr(e)
            for attr in ("nvtx_state", "source_info", "sass_by_pc", "source_files", "ptx_by_pc"):
                if hasattr(action, attr):
                    kernel.setdefault("api", []).append(attr)
            kernels.append(kernel)
    (out / "softmax_full.json").write_text(
        json.dumps({"ncu_report": root, "kernels": kernels}, indent=1, default=str)
    )
    print(f"ncu_report: {len(kernels)} kernel(s), {sum(len(k['metrics']) for k in kernels)} metrics")


def capture_ncu(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    exe = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    rep = out / "softmax_full"
    cmd = [exe, "--clock-control", "none", "--set", "full", "--import-source", "yes", "--nvtx"]
    cmd += ["--nvtx-include", f"{RANGE}/", "-f", "-o", str(rep), sys.executable, __file__, "--target"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False)
    (out / "ncu.log").write_text(done.stdout + done.stderr)
    print("ncu exit", done.returncode)
    dump_report(rep.with_suffix(".ncu-rep"), out)


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    parser.add_argument("--target", action="store_true", help="(internal) the process ncu profiles")
    args = parser.parse_args()
    if args.target:
        softmax_target()
        return
    args.out.mkdir(parents=True, exist_ok=True)
    import torch
    import triton

    versions = {"torch": torch.__version__, "triton": triton.__version__, "gpu": torch.cuda.get_device_name()}
    (args.out / "versions.json").write_text(json.dumps(versions))
    for what, fn in (("proton", capture_proton), ("ncu", capture_ncu)):
        try:
            fn(args.out / what)
        except Exception:
            (args.out / f"{what}.error.txt").write_text(traceback.format_exc())
            print(f"{what} failed:", traceback.format_exc()[-600:])
    os.sync()


if __name__ == "__main__":
    main()
