"""A case too large for the CPU is sized without being built and SKIPPED, never FAILED or ERRORed."""

from __future__ import annotations

import resource
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from rung import knobs
from rung.judge import case_size
from rung.judge.formats import load_problem
from rung.spec import Device, Run, RungResult, Solution, Status
from tests.conftest import FIXTURES, PROBLEMS, rung_of

KERNELBENCH = FIXTURES / "kernelbench"
GIB = 2**30

cpu_only = pytest.mark.skipif(
    torch.cuda.is_available(), reason="the CPU size limit holds only where there is no CUDA device"
)


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def test_kernelbench_case_is_sized_on_the_meta_device_without_allocating():
    problem = load_problem(KERNELBENCH / "relu_large.py")
    before = _peak_rss_bytes()
    size = problem.case_size({})
    assert size.total_bytes == 12 * GIB and not size.estimated  # 6 GiB of input, 6 GiB of output
    assert size.how == "inputs and output on the meta device"
    assert _peak_rss_bytes() - before < GIB // 4  # nothing near the case's 6 GiB was allocated
    weighted = load_problem(KERNELBENCH / "layer_norm_large.py").case_size({})
    assert weighted.total_bytes == 512 * 2**20  # Model built on the meta device as well


def test_kernelbench_output_is_estimated_where_the_reference_fails_on_meta(tmp_path):
    path = tmp_path / "scaled_by_max.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch
            import torch.nn as nn

            class Model(nn.Module):
                def forward(self, x):
                    return x / float(x.max())  # .item() of a meta tensor raises

            def get_inputs():
                return [torch.rand(1024, 1024)]

            def get_init_inputs():
                return []
            """
        )
    )
    problem = load_problem(path)
    size = problem.case_size({})
    assert size.estimated and size.total_bytes == 2 * 4 * 2**20
    session = SimpleNamespace(device="cpu", problem=problem)
    with knobs.scoped(RUNG_CPU_MAX_CASE_MB=4):
        assert case_size.fit(session, {}).over == (
            "{}: 8 MiB of inputs and output (output estimated as large as the inputs: the reference "
            "fails on meta tensors) > RUNG_CPU_MAX_CASE_MB=4"
        )


def test_native_size_is_the_cost_models_bytes_else_inputs_and_output_on_meta(tmp_path):
    assert load_problem(PROBLEMS / "vector_add").case_size({"n": 2**28}).total_bytes == 3 * GIB
    folder = _native(tmp_path, tests=[{"n": 1000}], benchmarks=[])
    size = load_problem(folder).case_size({"n": 2**20})
    assert (size.total_bytes, size.how) == (8 * 2**20, "inputs and output on the meta device")


def test_gpumode_size_is_unknown_and_the_case_is_built_saying_so():
    problem = load_problem(FIXTURES / "gpumode" / "vectorsum")
    assert problem.case_size(problem.tests[0]).total_bytes is None
    here = case_size.fit(SimpleNamespace(device="cpu", problem=problem), problem.tests[0])
    assert here.over == "" and "generate_input picks its own device" in here.figures["case_size"]


def test_on_a_cuda_device_no_case_is_sized_or_held_back():
    class Unsizable:
        def case_size(self, case):
            raise AssertionError("sized on a CUDA device")

    assert case_size.fit(SimpleNamespace(device="cuda", problem=Unsizable()), {}) == case_size.Fit()


@cpu_only
@pytest.mark.parametrize(
    ("problem", "solution", "size", "case"),
    [
        ("relu_large.py", "relu_triton.py", 12288, {"batch_size": 4096, "dim": 393216}),
        (
            "layer_norm_large.py",
            "layer_norm_functional.py",
            512,
            {"batch_size": 16, "features": 64, "dim1": 256, "dim2": 256},
        ),
    ],
)
def test_kernelbench_at_its_current_sizes_is_skipped_not_failed(climb, problem, solution, size, case):
    started = time.monotonic()
    run = climb(KERNELBENCH / problem, KERNELBENCH / "solutions" / solution)
    wall_s = time.monotonic() - started
    table = [(r.name, r.status.value, r.message) for r in run.rungs]
    assert not any(r.status.bad for r in run.rungs), table
    first = rung_of(run, "run")
    assert first.status == Status.SKIPPED and first.message == (
        f"{case}: {size} MiB of inputs and output > RUNG_CPU_MAX_CASE_MB=64: too large for the CPU interpreter"
    ), table
    assert first.seconds < 5  # sized, not built: KernelBench's one case is 6 GiB of input for ReLU
    for name in ("guard", "correct", "scale"):
        assert rung_of(run, name).status == Status.SKIPPED, table
    assert run.verdict == "SKIPPED at run"  # nothing was checked: not a PASS
    if solution.endswith("triton.py"):
        assert rung_of(run, "compile").status == Status.OK  # built on meta tensors, nothing allocated
    assert wall_s < 60, wall_s


@cpu_only
def test_native_benchmark_too_large_is_named_while_the_rest_is_checked(climb, tmp_path):
    folder = _native(tmp_path, tests=[{"n": 1000}, {"n": 4097}], benchmarks=[{"n": 4096}, {"n": 2**24}])
    run = climb(folder, _tanh_solution(tmp_path))
    statuses = {r.name: r.status for r in run.rungs}
    assert [statuses[n] for n in ("run", "guard", "correct")] == [Status.OK] * 3
    scale = rung_of(run, "scale")
    assert scale.status == Status.SKIPPED and scale.message == (
        "checked 1 of 2 benchmark cases (all match); {'n': 16777216}: 128 MiB of inputs and output "
        "> RUNG_CPU_MAX_CASE_MB=64: too large for the CPU interpreter"
    )
    assert run.verdict == "PASS"  # every test case checked: as before, a benchmark too large does not matter


@cpu_only
def test_native_test_case_too_large_skips_correct_and_the_verdict_says_so(climb, tmp_path):
    folder = _native(tmp_path, tests=[{"n": 1000}, {"n": 2**24}], benchmarks=[{"n": 4096}])
    run = climb(folder, _tanh_solution(tmp_path))
    correct = rung_of(run, "correct")
    assert correct.status == Status.SKIPPED and correct.message.startswith(
        "checked 1 of 2 test cases (all match); {'n': 16777216}: 128 MiB of inputs and output"
    )
    assert rung_of(run, "run").status == Status.OK
    assert run.verdict == "SKIPPED at correct"


@pytest.mark.parametrize(
    ("skipped", "verdict"),
    [
        ((), "PASS"),
        (("scale",), "SKIPPED at scale"),
        (("correct",), "SKIPPED at correct"),
        (("run", "correct"), "SKIPPED at run"),
    ],
)
def test_a_run_that_checked_nothing_does_not_read_pass(skipped, verdict):
    names = ("load", "run", "guard", "correct", "scale", "bench")
    rungs = [RungResult(n, Status.SKIPPED if n in skipped or n == "bench" else Status.OK) for n in names]
    run = Run(1, "p", Solution("s.py", "0"), Device("cpu", "cpu"), 0, rungs, finished=1.0)
    assert run.ok == (verdict == "PASS") and run.verdict == verdict


def _native(tmp_path: Path, tests: list, benchmarks: list) -> Path:
    """A problem without a cost model: its cases are sized from inputs and output on meta."""
    folder = tmp_path / "tanh"
    folder.mkdir()
    (folder / "problem.py").write_text(
        textwrap.dedent(
            f"""
            import torch

            TESTS = {tests!r}
            BENCHMARKS = {benchmarks!r}

            def generate_input(seed, device, n):
                g = torch.Generator().manual_seed(seed)
                return torch.randn(n, generator=g, device=device)

            def reference(x):
                return torch.tanh(x)
            """
        )
    )
    return folder


def _tanh_solution(tmp_path: Path) -> Path:
    path = tmp_path / "tanh_torch.py"
    path.write_text("import torch\n\n\ndef custom_kernel(x):\n    return torch.tanh(x)\n")
    return path
