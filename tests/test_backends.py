"""What the ladder does by the backend contract, whatever the kernel language: rungs that run
kernels SKIPPED where a backend has no CPU path, a missing package named with its extra, every
kernel attributed to its backend, and `rung new --backend` writing a first solution that climbs."""

from __future__ import annotations

import importlib.util
import sys
from types import SimpleNamespace

import pytest
import torch

from rung import backends, scaffold
from rung.backends import triton_backend
from rung.common.messages import SolutionStart
from rung.derived.trace import summarize
from rung.errors import UsageError
from rung.judge.own_kernels import attributed
from rung.runner import gpu_only_backends
from rung.solution import harness as harness_module
from rung.solution.requests import load
from rung.spec import Backend, Status
from tests.conftest import FIXTURES, PROBLEMS, rung_of

LANGUAGES = [b for b in backends.REGISTRY if b is not backends.REGISTRY[-1]]


def _installed(backend) -> bool:
    return all(importlib.util.find_spec(name.split(".")[0]) is not None for name in backend.IMPORTS)


def _fake(value: Backend, imports: tuple[str, ...], extra: str, prefix: str | None) -> SimpleNamespace:
    """A backend module as the registry sees it; `prefix` None claims every kernel name (as Triton does)."""
    return SimpleNamespace(
        BACKEND=value,
        IMPORTS=imports,
        EXTRA=extra,
        RUNS_ON_CPU=False,
        owns_kernel=lambda name: prefix is None or name.startswith(prefix),
    )


# --- which rungs run where --------------------------------------------------------------------


def test_gpu_only_backends_are_read_from_the_source():
    assert gpu_only_backends("import torch\nimport triton\n") == []
    assert gpu_only_backends("def broken(:\n") == []  # load says where it does not parse
    for b in LANGUAGES:
        if not b.RUNS_ON_CPU:
            assert gpu_only_backends(f"import torch\nimport {b.IMPORTS[0]}\n") == [b.BACKEND.value]


def test_a_backend_without_a_cpu_path_builds_and_dumps_then_skips_the_rest(climb, tmp_path, monkeypatch):
    """Triton, made to look GPU-only in the controller: its solution still compiles and dumps, the
    rungs that run it are SKIPPED saying why, and the verdict is SKIPPED, not a failure."""
    folder, first = scaffold.new_problem(tmp_path, "gpu_only", "triton")
    monkeypatch.setattr(triton_backend, "RUNS_ON_CPU", False)
    run = climb(folder, first)
    status = {r.name: (r.status, r.message) for r in run.rungs}
    assert status["compile"][0] == Status.OK and status["dump"][0] == Status.OK
    for name in ("run", "guard", "correct", "scale"):
        assert status[name] == (Status.SKIPPED, "needs a GPU: triton solutions run only on CUDA devices")
    assert status["bench"] == (Status.SKIPPED, "no CUDA device on this machine")
    assert not run.ok and run.outcome.value == "unverified" and run.verdict == "SKIPPED at run"


# --- a backend whose package is missing -------------------------------------------------------


@pytest.fixture
def harness_for(tmp_path, monkeypatch):
    """A solution process's harness, in this process, for a solution with the given source (no
    Triton launch counter: it would patch Triton for every test in this process)."""
    monkeypatch.setattr(harness_module, "_launch_counter", lambda: None)

    def make(source: str) -> harness_module.Harness:
        path = tmp_path / "solution.py"
        path.write_text(source + "\n\ndef custom_kernel(x):\n    return x\n")
        return harness_module.Harness(SolutionStart(source=str(path), scratch=str(tmp_path)))

    return make


def test_a_missing_backend_package_fails_load_naming_the_extra(harness_for, monkeypatch):
    dsl = _fake(Backend.CUTE, ("rung_absent_dsl",), "absent", "k_")
    monkeypatch.setattr(backends, "REGISTRY", [dsl, *backends.REGISTRY])
    answer = load(harness_for("import torch\nimport rung_absent_dsl.language as dl"))
    assert answer["failed"] == (
        "cute solution, but rung_absent_dsl is not installed here: pip install 'rung[absent]'"
    )


@pytest.mark.parametrize("backend", [b for b in LANGUAGES if b.EXTRA], ids=lambda b: b.BACKEND.value)
def test_each_registered_extra_is_named_when_its_package_is_missing(harness_for, monkeypatch, backend):
    top = backend.IMPORTS[0].split(".")[0]
    monkeypatch.setitem(sys.modules, top, None)  # `import top` now raises ModuleNotFoundError
    answer = load(harness_for(f"import torch\nimport {backend.IMPORTS[-1]}"))
    assert answer["failed"].endswith(f"pip install 'rung[{backend.EXTRA}]'"), answer
    assert answer["backend"] == backend.BACKEND.value


def test_a_missing_module_that_is_no_backend_is_the_solutions_error(harness_for):
    answer = load(harness_for("import torch\nimport rung_absent_helper"))
    assert "failed" not in answer
    assert answer["error"].startswith("ModuleNotFoundError: No module named 'rung_absent_helper'")


# --- every kernel attributed to its backend -----------------------------------------------------

DSL = _fake(Backend.CUTE, ("dsl",), "", "kernel_cutlass_")
CATCH_ALL = _fake(Backend.TRITON, ("jit",), "", None)
TORCH_KERNEL = "void at::native::vectorized_elementwise_kernel<4>(int)"


def test_a_kernel_goes_to_the_backend_that_names_it_before_one_that_claims_any_name():
    for found in ([DSL, CATCH_ALL], [CATCH_ALL, DSL]):
        assert backends.owner_of("kernel_cutlass_gemm_0", found) == Backend.CUTE
        assert backends.owner_of("epilogue", found) == Backend.TRITON
    assert backends.owner_of("epilogue", [DSL]) == Backend.TORCH  # no language of the solution claims it
    assert backends.owner_of("anything", [backends.REGISTRY[-1]]) == Backend.TORCH


def test_torch_kernels_are_torchs_whichever_languages_the_solution_uses():
    for b in LANGUAGES:
        assert backends.owner_of(TORCH_KERNEL, [b]) == Backend.TORCH, b.BACKEND


def test_guard_attributes_the_kernels_a_call_ran():
    got = attributed(["kernel_cutlass_gemm_0", "epilogue", TORCH_KERNEL], [DSL, triton_backend])
    assert got == {"kernel_cutlass_gemm_0": "cute", "epilogue": "triton", TORCH_KERNEL: "torch"}


def test_trace_gives_each_kernel_its_backend_and_each_backend_its_share():
    # a call's kernels are those its rung::call range launched (host launch and device work share
    # a correlation id)
    call = {"ph": "X", "cat": "user_annotation", "name": "rung::call", "ts": 0, "dur": 5, "pid": 1, "tid": 1}

    def kernel(name: str, ts: float, dur: float, corr: int) -> list[dict]:
        launch = {
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": corr,
            "dur": 0.5,
            "pid": 1,
            "tid": 1,
        }
        launch["args"] = {"correlation": corr}
        work = {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"stream": 7}}
        work["args"]["correlation"] = corr
        return [launch, work]

    events = [
        call,
        *kernel("kernel_cutlass_gemm_0", 10, 6, 1),
        *kernel("epilogue", 17, 3, 2),
        *kernel(TORCH_KERNEL, 21, 1, 3),
    ]
    s = summarize(events, [DSL, triton_backend])
    assert s is not None
    assert {k["name"]: k["backend"] for k in s["kernels"]} == {
        "kernel_cutlass_gemm_0": "cute",
        "epilogue": "triton",
        TORCH_KERNEL: "torch",
    }
    assert s["share_of_busy_by_backend"] == pytest.approx({"cute": 0.6, "triton": 0.3, "torch": 0.1})
    assert "backend" not in summarize(events)["kernels"][0]  # no load rung said which backends


# --- rung new --backend ---------------------------------------------------------------------


def test_an_unknown_backend_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match=r"unknown backend 'fortran': one of .*triton"):
        scaffold.new_problem(tmp_path, "p", "fortran")
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("backend", backends.REGISTRY, ids=lambda b: b.BACKEND.value)
def test_each_template_climbs_as_far_as_this_machine_allows(climb, tmp_path, backend):
    """Each backend's first solution: built for the target where it builds ahead of time, and on
    a machine that can run it, through every rung that runs here."""
    if not _installed(backend):
        pytest.skip(f"{backend.BACKEND.value}: its package is not installed here")
    folder, first = scaffold.new_problem(tmp_path, "scaffolded", backend.BACKEND.value)
    assert first.name == f"{backend.BACKEND.value}_first.py"
    run = climb(folder, first)
    rungs = "\n".join(f"{r.name}: {r.status.value} {r.message}" for r in run.rungs)
    assert not any(r.status.bad for r in run.rungs), rungs
    assert rung_of(run, "load").metrics["backends"] == [backend.BACKEND.value]
    if backend.compile_solution is not None:
        assert rung_of(run, "compile").status == Status.OK, rungs
        assert rung_of(run, "dump").status == Status.OK, rungs
    if backend.RUNS_ON_CPU or run.device.kind == "cuda":
        assert run.verdict == "PASS", rungs
    else:
        assert run.verdict == "SKIPPED at run", rungs


# --- on a GPU ---------------------------------------------------------------------------------

needs_a_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")


@pytest.mark.gpu
@needs_a_gpu
@pytest.mark.parametrize("backend", LANGUAGES, ids=lambda b: b.BACKEND.value)
def test_on_a_gpu_each_template_launches_its_own_kernel_and_trace_says_whose(climb, tmp_path, backend):
    if not _installed(backend):
        pytest.skip(f"{backend.BACKEND.value}: its package is not installed here")
    folder, first = scaffold.new_problem(tmp_path, "scaffolded", backend.BACKEND.value)
    run = climb(folder, first)
    guard = rung_of(run, "guard")
    assert guard.metrics["checks"]["kernel_launched"] == "ok", guard.message
    assert backend.BACKEND.value in guard.metrics["kernels"].values(), guard.metrics
    trace = rung_of(run, "trace")
    assert trace.status == Status.OK, trace.message
    for case in trace.metrics["cases"]:
        assert case["kernels"][0]["backend"] == backend.BACKEND.value, case


@pytest.mark.gpu
@needs_a_gpu
def test_on_a_gpu_a_cute_solution_that_only_calls_torch_launched_no_kernel(climb):
    """The fixture imports CuTe DSL and never launches a kernel of it: torch computes the answer."""
    if importlib.util.find_spec("cutlass") is None:
        pytest.skip("cute: its package is not installed here")
    guard = rung_of(climb(PROBLEMS / "vector_add", FIXTURES / "cute_calls_torch.py"), "guard")
    assert guard.status == Status.FAILED
    assert guard.metrics["checks"]["kernel_launched"] == "fired"
    assert "kernel_launched: no cute kernel was launched during the call (only torch's: " in guard.message
