"""Variants of the pipelined prefix-sum scan, checked exactly and timed beside a copy, cuda.py and
CUB (GPU only; about a minute on an H200 with cold builds).

    python bench/scan_variants.py --out results/scan_variants.json

The kernel is problems/prefix_sum/solutions/correct/cuda_pipelined.py's CUDA source, read from
that file (not imported, so its own extension is not built) and built once with every variant
below instantiated (`pipelined::Config<TILE, STAGES, BLOCKS_PER_SM, WARPS, LOOKBACK, EARLY,
BULK_STORE>`) behind a switch. cuda.py and cuda_cub.py are imported as they are. The three
builds run at once, each in a child process (`--build NAME`); the parent then loads them from
torch's extension cache.

Each variant is checked against torch.cumsum(dtype=int32) on n in {1, 5, 4097, 70001, 2^20+3,
2^26, 2^28} (values in -8..8 as the problem draws them, and full-range int32 at 2^20+3 and 2^26,
so sums wrap), on misaligned views (x[1:], which takes the element-wise kernel), on 30 calls back
to back on one workspace, and on a CUDA graph of several calls sharing one workspace, replayed
twice between eager calls. A mismatch says how many elements differ, the first index, got and
expected.

Timing: CUDA events around each call at 2^26 and 2^28, after writing then reading a 256 MB
buffer (the write evicts the L2, the read leaves it clean, as rung's Flusher does); median of 20
samples, with p20 and p80; "copy/it" in the table is the copy's time over the kernel's (the
fraction of copy speed it reaches; 90% of the roofline is about 0.93 of a copy). The whole run
stops itself after --deadline seconds (a kernel that never finishes would otherwise hang it),
having written what it had to --out.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "problems" / "prefix_sum" / "solutions" / "correct"

# name: the Config's arguments (TILE, STAGES, BLOCKS_PER_SM[, WARPS, LOOKBACK, EARLY, BULK_STORE]).
# The first is the solution's own choice; each other changes one or two things from it.
VARIANTS = {
    "t8k_s3_b2": "8192, 3, 2",
    "t8k_s3_b2_no_early": "8192, 3, 2, 8, 4, false",
    "t8k_s3_b2_lookback32": "8192, 3, 2, 8, 1",
    "t8k_s3_b2_lookback256": "8192, 3, 2, 8, 8",
    "t8k_s3_b2_bulk_store": "8192, 3, 2, 8, 4, true, true",
    "t8k_s6_b1": "8192, 6, 1",
    "t8k_s6_b1_bulk_store": "8192, 6, 1, 8, 4, true, true",
    "t4k_s6_b2": "4096, 6, 2",
    "t4k_s4_b3": "4096, 4, 3",
    "t4k_s3_b4": "4096, 3, 4",
    "t16k_s3_b1": "16384, 3, 1",
    "t16k_s3_b1_w16": "16384, 3, 1, 16",
}
CHECK_SIZES = [1, 5, 4097, 70001, 2**20 + 3, 2**26, 2**28]
FULL_RANGE_SIZES = [2**20 + 3, 2**26]
MISALIGNED_SIZES = [4097, 70001, 2**20 + 3]
GRAPH_SIZE, GRAPH_CALLS = 2**22 + 3, 6  # several tiles a block: 513 of 8192 elements
BACK_TO_BACK = 30  # calls on one workspace with no synchronisation between them
TIME_SIZES = [2**26, 2**28]
SAMPLES = 20
FLUSH_BYTES = 256 * 2**20


def pipelined_source() -> str:
    """The CUDA string of cuda_pipelined.py, read without importing (importing would build it)."""
    tree = ast.parse((SOLUTIONS / "cuda_pipelined.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "CUDA" for t in node.targets):
            return ast.literal_eval(node.value)
    raise RuntimeError("no CUDA = r'''...''' in cuda_pipelined.py")


def variants_cuda() -> str:
    """The solution's source, then each variant as a type and a switch over them."""
    lines = [pipelined_source(), "namespace variants {"]
    lines += [f"using C{i} = pipelined::Config<{args}>;" for i, args in enumerate(VARIANTS.values())]

    def switch(signature: str, body: str, fallback: str) -> None:
        lines.append(f"{signature} {{\n    switch (v) {{")
        lines.extend(f"    case {i}: {body.format(C=f'C{i}')}" for i in range(len(VARIANTS)))
        lines.append(f"    }}\n    {fallback}\n}}")

    switch("int words(int v, long long n)", "return pipelined::Scan<{C}>::workspace_words(n);", "return -1;")
    switch(
        "cudaError_t launch(int v, const int* x, int* out, long long n, unsigned long long* ws, cudaStream_t s)",
        "return pipelined::Scan<{C}>::launch(x, out, n, ws, s);",
        "return cudaErrorInvalidValue;",
    )
    switch("int blocks_per_sm(int v)", "return pipelined::Scan<{C}>::blocks_per_sm();", "return -1;")
    # registers, local (spill) bytes, static shared bytes of the aligned (a = 1) or element-wise kernel
    switch(
        "int attribute(int v, int a, int what)",
        "return attribute_of(a ? (const void*)pipelined::scan_pipelined<{C}, true>"
        " : (const void*)pipelined::scan_pipelined<{C}, false>, what);",
        "return -1;",
    )
    switch("int dynamic_smem(int v)", "return {C}::SMEM_BYTES;", "return -1;")
    lines.insert(
        lines.index("namespace variants {") + 1,
        """int attribute_of(const void* kernel, int what) {
    cudaFuncAttributes f;
    if (cudaFuncGetAttributes(&f, kernel) != cudaSuccess) return -1;
    return what == 0 ? f.numRegs : what == 1 ? (int)f.localSizeBytes : (int)f.sharedSizeBytes;
}""",
    )
    lines.append("}  // namespace variants")
    return "\n".join(lines)


VARIANTS_CPP = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <climits>

namespace variants {
int words(int v, long long n);
cudaError_t launch(int v, const int* x, int* out, long long n, unsigned long long* ws, cudaStream_t s);
int blocks_per_sm(int v);
int attribute(int v, int a, int what);
int dynamic_smem(int v);
}

int64_t words(int64_t v, int64_t n) { return variants::words((int)v, n); }
int64_t blocks_per_sm(int64_t v) { return variants::blocks_per_sm((int)v); }
int64_t attribute(int64_t v, int64_t aligned, int64_t what) { return variants::attribute((int)v, (int)aligned, (int)what); }
int64_t dynamic_smem(int64_t v) { return variants::dynamic_smem((int)v); }

void inclusive_sum(int64_t v, torch::Tensor x, torch::Tensor out, torch::Tensor ws) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kInt && x.is_contiguous(), "x: a contiguous int32 CUDA tensor");
    TORCH_CHECK(out.scalar_type() == torch::kInt && out.is_contiguous() && out.numel() == x.numel(), "out: like x");
    TORCH_CHECK(x.numel() > 0 && x.numel() <= INT_MAX, "n must be in [1, 2^31)");
    TORCH_CHECK(ws.scalar_type() == torch::kLong && ws.numel() == variants::words((int)v, x.numel()), "workspace size");
    cudaError_t err = variants::launch((int)v, x.data_ptr<int>(), out.data_ptr<int>(), x.numel(),
                                       reinterpret_cast<unsigned long long*>(ws.data_ptr<int64_t>()),
                                       c10::cuda::getCurrentCUDAStream());
    TORCH_CHECK(err == cudaSuccess, "variant ", v, ": ", cudaGetErrorString(err));
}
"""


def build_variants() -> Any:
    from torch.utils.cpp_extension import load_inline

    return load_inline(
        "rung_scan_variants",
        cpp_sources=VARIANTS_CPP,
        cuda_sources=variants_cuda(),
        functions=["words", "blocks_per_sm", "attribute", "dynamic_smem", "inclusive_sum"],
        no_implicit_headers=True,
    )


def import_solution(stem: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"scan_variants_{stem}", SOLUTIONS / f"{stem}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILDS: dict[str, Callable[[], Any]] = {
    "variants": build_variants,
    "cuda": lambda: import_solution("cuda"),
    "cub": lambda: import_solution("cuda_cub"),
}


def build_all_at_once() -> dict[str, float]:
    """Each build in a child process, all at once (they fill torch's extension cache); seconds each."""
    started = time.perf_counter()
    children = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--build", name],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name in BUILDS
    }
    seconds = {}
    for name, child in children.items():
        output, _ = child.communicate()
        if child.returncode != 0:
            raise RuntimeError(f"building {name} failed (exit {child.returncode}):\n{output}")
        seconds[name] = round(time.perf_counter() - started, 1)
        print(f"built {name} in {seconds[name]} s", flush=True)
    return seconds


# Checks ------------------------------------------------------------------------------------------


def inputs(n: int, full_range: bool, seed: int = 0) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed + n)
    low, high = (-(2**31), 2**31) if full_range else (-8, 9)
    return torch.randint(low, high, (n,), generator=g, device="cuda", dtype=torch.int32)


def mismatch(got: torch.Tensor, x: torch.Tensor) -> str | None:
    """None when got == torch.cumsum(x) exactly, else where and how it differs."""
    want = torch.cumsum(x, dim=0, dtype=torch.int32)
    bad = (got != want).nonzero()
    if bad.numel() == 0:
        return None
    i = int(bad[0, 0])
    return f"{bad.shape[0]} of {x.numel()} differ, first at {i}: got {int(got[i])}, expected {int(want[i])}"


class Variant:
    """One configuration: a call with its own workspace per (stream, n)."""

    def __init__(self, ext: Any, index: int, name: str) -> None:
        self.ext, self.index, self.name = ext, index, name
        self.workspaces: dict[tuple[int, int], torch.Tensor] = {}

    def workspace(self, n: int) -> torch.Tensor:
        key = (torch.cuda.current_stream().cuda_stream, n)
        if key not in self.workspaces:
            words = self.ext.words(self.index, n)
            self.workspaces[key] = torch.zeros(words, dtype=torch.int64, device="cuda")
        return self.workspaces[key]

    def __call__(self, x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x) if out is None else out
        self.ext.inclusive_sum(self.index, x, out, self.workspace(x.numel()))
        return out

    def facts(self) -> dict[str, Any]:
        e, v = self.ext, self.index
        return {
            "config": VARIANTS[self.name],
            "registers": [e.attribute(v, 1, 0), e.attribute(v, 0, 0)],  # aligned, element-wise kernel
            "local_bytes": [e.attribute(v, 1, 1), e.attribute(v, 0, 1)],
            "static_smem_bytes": e.attribute(v, 1, 2),
            "dynamic_smem_bytes": e.dynamic_smem(v),
            "blocks_per_sm": e.blocks_per_sm(v),
        }


def check(fn: Callable[[torch.Tensor], torch.Tensor], name: str, graph_of: Variant | None) -> dict[str, str]:
    """Exactness on every size, misaligned views and (for a variant) a replayed CUDA graph."""
    found: dict[str, str] = {}
    for n in CHECK_SIZES:
        for full in [False, True] if n in FULL_RANGE_SIZES else [False]:
            x = inputs(n, full)
            found[f"n={n}{' full-range' if full else ''}"] = mismatch(fn(x), x) or "ok"
            del x
    for n in MISALIGNED_SIZES:
        base = inputs(n + 1, True)
        found[f"misaligned n={n}"] = mismatch(fn(base[1:]), base[1:]) or "ok"
    if graph_of is not None:
        xs = [inputs(GRAPH_SIZE, True, seed=k) for k in range(BACK_TO_BACK)]
        outs = [fn(x) for x in xs]
        found[f"{BACK_TO_BACK} calls back to back"] = next(
            (
                f"call {k}: {wrong}"
                for k, (x, out) in enumerate(zip(xs, outs, strict=True))
                if (wrong := mismatch(out, x))
            ),
            "ok",
        )
        del xs, outs
        found["graph"] = graph_check(graph_of)
    bad = {k: v for k, v in found.items() if v != "ok"}
    print(f"  {name}: {bad or 'exact'}", flush=True)
    return found


def graph_check(variant: Variant) -> str:
    """GRAPH_CALLS calls captured in one graph on one stream and workspace, replayed twice between
    eager calls: the counters the last block resets and the epochs must carry from call to call."""
    xs = [inputs(GRAPH_SIZE, True, seed=k) for k in range(GRAPH_CALLS)]
    outs = [torch.empty_like(x) for x in xs]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        variant(xs[0], outs[0])  # the stream's workspace, made outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for x, out in zip(xs, outs, strict=True):
                variant(x, out)
    torch.cuda.current_stream().wait_stream(stream)
    for replay in range(2):
        for out in outs:
            out.fill_(-1)
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            variant(xs[-1], outs[-1])  # eager, between replays, same workspace
            graph.replay()
        torch.cuda.synchronize()
        for k, (x, out) in enumerate(zip(xs, outs, strict=True)):
            wrong = mismatch(out, x)
            if wrong:
                return f"replay {replay}, call {k}: {wrong}"
    return "ok"


# Timing ------------------------------------------------------------------------------------------


def timing(call: Callable[[], Any], flush: torch.Tensor) -> dict[str, float]:
    """Median, p20 and p80 of SAMPLES event-timed calls, each after a write and read of the flush buffer."""
    for _ in range(3):
        call()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(SAMPLES)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(SAMPLES)]
    for start, end in zip(starts, ends, strict=True):
        flush.zero_()
        flush.max()
        start.record()
        call()
        end.record()
    torch.cuda.synchronize()
    us = sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends, strict=True))
    return {
        "median_us": round(statistics.median(us), 2),
        "p20_us": round(us[len(us) // 5], 2),
        "p80_us": round(us[4 * len(us) // 5], 2),
    }


def time_all(calls: dict[str, Callable[[torch.Tensor, torch.Tensor], Any]]) -> dict[str, dict[int, dict]]:
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    times: dict[str, dict[int, dict]] = {name: {} for name in calls}
    for n in TIME_SIZES:
        x = inputs(n, False)
        out = torch.empty_like(x)
        for name, fn in calls.items():
            times[name][n] = timing(lambda fn=fn, x=x, out=out: fn(x, out), flush)
            print(f"  n=2^{n.bit_length() - 1} {name}: {times[name][n]['median_us']} us", flush=True)
        del x, out
    return times


def table(report: dict[str, Any]) -> str:
    copy = report["times"]["copy"]
    head = f"{'kernel':<24} {'regs':>7} {'local':>5} {'smem KB':>7} {'blk/SM':>6} {'checks':>6}"
    for n in TIME_SIZES:
        head += f" {'2^' + str(n.bit_length() - 1) + ' us':>10} {'copy/it':>7}"
    rows = [head]
    for name, times in report["times"].items():
        facts = report["variants"].get(name, {})
        checks = report["checks"].get(name)
        row = f"{name:<24} "
        if facts:
            regs = "/".join(str(r) for r in facts["registers"])
            local = max(facts["local_bytes"])
            smem = (facts["dynamic_smem_bytes"] + facts["static_smem_bytes"]) / 1024
            row += f"{regs:>7} {local:>5} {smem:>7.1f} {facts['blocks_per_sm']:>6} "
        else:
            row += f"{'':>7} {'':>5} {'':>7} {'':>6} "
        row += (
            f"{'-' if checks is None else 'exact' if all(v == 'ok' for v in checks.values()) else 'WRONG':>6}"
        )
        for n in TIME_SIZES:
            t = times.get(n)
            row += (
                f" {t['median_us']:>10.1f} {copy[n]['median_us'] / t['median_us']:>7.1%}" if t else " " * 19
            )
        rows.append(row)
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, help="where to write the JSON report")
    parser.add_argument("--build", choices=sorted(BUILDS), help=argparse.SUPPRESS)  # the child's job
    parser.add_argument("--deadline", type=float, default=145.0, help="seconds before the run stops itself")
    args = parser.parse_args()
    if args.build:
        BUILDS[args.build]()
        return
    if args.out is None:
        parser.error("--out is required")
    if not torch.cuda.is_available():
        sys.exit("scan_variants: needs a CUDA device")

    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "samples": SAMPLES,
        "flush_bytes": FLUSH_BYTES,
        "variants": {},
        "checks": {},
        "times": {},
        "stage": "building",
    }

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, default=str))

    def stop_at_deadline() -> None:
        report["stopped"] = f"past the {args.deadline:.0f} s deadline while {report['stage']}"
        print(f"scan_variants: {report['stopped']} (a kernel that never ends?)", flush=True)
        with contextlib.suppress(Exception):  # the main thread may be changing the report
            save()
        os._exit(3)

    watchdog = threading.Timer(args.deadline, stop_at_deadline)
    watchdog.daemon = True
    watchdog.start()

    report["build_s"] = build_all_at_once()
    ext = build_variants()
    baselines = {
        "cuda.py": import_solution("cuda").custom_kernel,
        "cuda_cub.py": import_solution("cuda_cub").custom_kernel,
    }
    variants = [Variant(ext, i, name) for i, name in enumerate(VARIANTS)]

    print("checks (exact against torch.cumsum):", flush=True)
    for v in variants:
        report["stage"] = f"checking {v.name}"
        report["variants"][v.name] = v.facts()
        try:
            report["checks"][v.name] = check(v, v.name, graph_of=v)
        except RuntimeError as error:  # a launch error, said as the variant's
            report["checks"][v.name] = {"error": str(error)}
            print(f"  {v.name}: {error}", flush=True)
        save()
    for name, fn in baselines.items():
        report["stage"] = f"checking {name}"
        report["checks"][name] = check(fn, name, graph_of=None)

    print("times (median of 20, L2 flushed):", flush=True)
    exact = [v for v in variants if all(r == "ok" for r in report["checks"][v.name].values())]
    calls: dict[str, Callable[[torch.Tensor, torch.Tensor], Any]] = {"copy": lambda x, out: out.copy_(x)}
    calls |= {name: (lambda x, out, fn=fn: fn(x)) for name, fn in baselines.items()}
    calls |= {v.name: (lambda x, out, v=v: v(x, out)) for v in exact}
    report["stage"] = "timing"
    report["times"] = time_all(calls)
    report["stage"] = "done"
    save()
    print(table(report), flush=True)
    watchdog.cancel()


if __name__ == "__main__":
    main()
