"""The format is the contract: a problem and solutions written here, never seen before, climb the same."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

PROBLEM = '''
"""Scale rows: out[i, j] = x[i, j] * s[i]."""
import torch

TESTS = [{"rows": 3, "cols": 50}, {"rows": 9, "cols": 129}]
BENCHMARKS = [{"rows": 64, "cols": 4096}, {"rows": 65536, "cols": 4096}]


def generate_input(seed, device, rows, cols):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=g).to(device), torch.rand(rows, generator=g).to(device)


def reference(x, s):
    return x * s[:, None]


def cost(rows, cols):
    return {"flops": rows * cols, "bytes": 8 * rows * cols + 4 * rows}
'''

TRITON = """
import torch
import triton
import triton.language as tl


@triton.jit
def scale_rows(x, s, out, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    v = tl.load(x + row * cols + offs, mask=m)
    tl.store(out + row * cols + offs, v * tl.load(s + row), mask=m)


def custom_kernel(x, s):
    out = torch.empty_like(x)
    rows, cols = x.shape
    scale_rows[(rows,)](x, s, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out
"""

# Wrong: scales every row by the first row's factor.
FIRST_ROW_ONLY = TRITON.replace("tl.load(s + row)", "tl.load(s)")


def test_unseen_problem_and_solutions(tmp_path):
    folder = tmp_path / "scale_rows"
    folder.mkdir()
    (folder / "problem.py").write_text(textwrap.dedent(PROBLEM))
    (tmp_path / "good.py").write_text(TRITON)
    (tmp_path / "first_row_only.py").write_text(FIRST_ROW_ONLY)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rung",
            "check",
            str(folder),
            str(tmp_path / "good.py"),
            str(tmp_path / "first_row_only.py"),
            "--json",
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr
    good, bad = json.loads(done.stdout)["solutions"]
    by_name = {r["name"]: r for r in good["rungs"]}
    assert good["ok"], good
    assert good["backend"] == "triton"
    assert (
        by_name["compile"]["status"] == "OK"
        and by_name["compile"]["metrics"]["kernels"][0]["name"] == "scale_rows"
    )
    assert by_name["scale"]["status"] == "SKIPPED" and "1 of 2 benchmark cases" in by_name["scale"]["message"]
    assert bad["verdict"] == "FAIL at correct"
    failing = next(r for r in bad["rungs"] if r["status"] == "FAILED")
    assert "elements outside" in failing["message"]
