"""The TileLang backend: detection, builds for sm_90a without a GPU (the shipped solutions' SASS
facts), the build cache, TileLang's own words for a kernel it refuses, the stand-in a solution
gets instead of a kernel; on a GPU, the shipped solutions climbed.

The builds are shared by the module (one per shipped solution, for one benchmark case each) and
use a TileLang cache and a build cache of their own, so every run of this file builds afresh.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest
import torch

from rung import backends
from rung.backends import build_cache
from rung.spec import Backend, Status
from tests.conftest import PROBLEMS, rung_of

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tilelang") is None, reason="tilelang is not installed"
)

tb = pytest.importorskip("rung.backends.tilelang_backend")
ARCH = "sm_90"  # the knob's default: TileLang reads it as a Hopper device would, sm_90a
needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None, reason="no nvcc on PATH: TileLang builds with it"
)


def _meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype, device="meta")


# One benchmark case each: the shape the speed is for.
SHIPPED = {
    "vector_add": ({"n": 2**28}, (_meta(2**28), _meta(2**28))),
    "softmax": ({"rows": 1024, "cols": 4096}, (_meta(1024, 4096),)),
    "matmul": ({"m": 256, "n": 256, "k": 256}, (_meta(256, 256, dtype=torch.float16),) * 2),
}


def _calls(case: dict, inputs: tuple) -> list:
    return [(case, lambda module: module.custom_kernel(*inputs))]


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    """A TileLang cache and a build cache of this module's own (TileLang reads its variable live)."""
    root = tmp_path_factory.mktemp("tilelang_caches")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILELANG_CACHE_DIR", str(root / "tilelang"))
        mp.setattr(build_cache, "_root", root / "builds")
        yield root


@pytest.fixture(scope="module")
def built(caches, tmp_path_factory):
    """Each shipped TileLang solution built for one benchmark case: its kernels and their SASS."""
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on PATH: TileLang builds with it")
    out = {}
    for problem, (case, inputs) in SHIPPED.items():
        solution = PROBLEMS / problem / "solutions" / "correct" / "tilelang_tuned.py"
        kernels = tb.compile_solution(solution, _calls(case, inputs), ARCH, tmp_path_factory.mktemp(problem))
        out[problem] = [(k, _sass(k)) for k in kernels]
    return out


def _sass(kernel) -> str:
    return Path(next(a for a in kernel.artifacts if a.endswith(".sass"))).read_text()


def _ops(sass: str, prefix: str) -> set[str]:
    return set(re.findall(rf"\b{prefix}[\w.]*", sass))


# --- detection -----------------------------------------------------------------------------------


def test_a_solution_importing_tilelang_is_tilelangs_and_a_mixed_one_names_both():
    assert backends.detect("import torch\nimport tilelang\n") is tb
    assert backends.detect("import torch\nimport tilelang.language as T\n") is tb
    assert backends.detect("from tilelang import language as T\n") is tb
    assert [b.BACKEND for b in backends.detect_all("import triton\nimport tilelang\n")] == [
        Backend.TILELANG,
        Backend.TRITON,
    ]
    assert backends.detect("import torch\nimport tilelang_helpers\n") is not tb  # another package


def test_tilelang_kernel_names_are_plain_identifiers_ending_in_kernel():
    assert tb.owns_kernel("gemm_kernel") and tb.owns_kernel("row_softmax_kernel")
    assert not tb.owns_kernel("void at::native::vectorized_elementwise_kernel<4>(int)")
    assert not tb.owns_kernel("matmul")  # a Triton kernel named after its function
    assert backends.owner_of("gemm_kernel", [tb]) == Backend.TILELANG


def test_the_arch_is_what_tilelang_targets_on_such_a_device():
    assert tb.target_arch("sm_90") == "sm_90a"  # wgmma and TMA need the suffix
    assert tb.target_arch("sm_90a") == "sm_90a"
    assert tb.target_arch("sm_80") == "sm_80"
    assert tb.target_arch("sm_100") == "sm_100a"


# --- builds for sm_90a, no GPU -----------------------------------------------------------------


def test_every_shipped_solution_builds_its_cuda_ptx_cubin_and_sass(built):
    for problem, kernels in built.items():
        assert len(kernels) == 1, problem
        kernel, _ = kernels[0]
        assert {Path(a).suffix for a in kernel.artifacts} == {
            ".cu",
            ".ptx",
            ".cubin",
            ".sass",
            ".sass_lineinfo",
        }, problem
        assert kernel.registers > 0 and kernel.max_threads > 0 and kernel.build_s > 0, problem
        assert kernel.spill_instructions == 0 and kernel.local_bytes == 0, problem
        assert kernel.case == SHIPPED[problem][0]
        ptx = Path(next(a for a in kernel.artifacts if a.endswith(".ptx"))).read_text()
        assert ".target sm_90a" in ptx, problem
        assert tb.owns_kernel(kernel.name), kernel.name


def test_the_matmul_uses_hopper_tensor_cores_fed_by_tma(built):
    ((kernel, sass),) = built["matmul"]
    assert "HGMMA.64x256x16.F32" in _ops(sass, "HGMMA"), _ops(sass, "HGMMA")
    assert _ops(sass, "UTMALDG"), "no TMA load"
    assert kernel.max_threads == 384  # two consumer warpgroups and TileLang's producer
    assert kernel.shared_bytes >= 3 * (128 * 64 + 64 * 256) * 2  # three stages of both tiles


def test_the_memory_bound_kernels_move_16_byte_vectors(built):
    for problem in ("vector_add", "softmax"):
        ((_, sass),) = built[problem]
        assert {"LDG.E.128.CONSTANT", "STG.E.128"} <= _ops(sass, "LDG") | _ops(sass, "STG"), problem


def test_an_unchanged_solution_is_not_built_again(built, tmp_path):
    case, inputs = SHIPPED["vector_add"]
    solution = PROBLEMS / "vector_add" / "solutions" / "correct" / "tilelang_tuned.py"
    (again,) = tb.compile_solution(solution, _calls(case, inputs), ARCH, tmp_path)
    ((first, _),) = built["vector_add"]
    assert not first.cached and again.cached
    assert again.registers == first.registers and Path(again.artifacts[0]).read_text()


@needs_nvcc
def test_a_kernel_built_alike_for_two_cases_is_built_once(caches, tmp_path):
    solution = PROBLEMS / "vector_add" / "solutions" / "correct" / "tilelang_tuned.py"
    calls = [({"n": n}, lambda m, n=n: m.custom_kernel(_meta(n), _meta(n))) for n in (1000, 2**20)]
    (kernel,) = tb.compile_solution(solution, calls, ARCH, tmp_path)  # `n` is dynamic: one kernel
    assert kernel.case == {"n": 1000}


# --- what the solution gets instead of a kernel ---------------------------------------------------

OUT_IDX = """
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def double(block: int = 256):
    n = T.dynamic("n")

    @T.prim_func
    def twice(x: T.Tensor((n,), "float32"), y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    y[bx * block + i] = x[bx * block + i] * 2

    return twice


def custom_kernel(x):
    return double()(x)
"""


@needs_nvcc
def test_a_kernel_that_allocates_its_output_returns_one_of_the_right_shape(caches, tmp_path):
    solution = tmp_path / "out_idx.py"
    solution.write_text(OUT_IDX)
    got = []
    calls = [({"n": 777}, lambda m: got.append(m.custom_kernel(_meta(777))))]
    (kernel,) = tb.compile_solution(solution, calls, ARCH, tmp_path / "out")
    assert kernel.name == "twice_kernel"
    assert got[0].shape == (777,) and got[0].dtype == torch.float32 and got[0].is_meta


# --- TileLang's own words for a kernel it refuses ---------------------------------------------


def test_operands_that_disagree_on_k_fail_with_tilelangs_line(caches, tmp_path):
    solution = PROBLEMS / "matmul" / "solutions" / "wrong" / "tilelang_k_mismatch.py"
    case, inputs = SHIPPED["matmul"]
    with pytest.raises(tb.CompileFailed) as failed:
        tb.compile_solution(solution, _calls(case, inputs), ARCH, tmp_path)
    line = next(n for n, text in enumerate(solution.read_text().splitlines(), 1) if "T.gemm(" in text)
    assert str(failed.value) == (
        f"tilelang_k_mismatch.py:{line}: AssertionError: T.gemm K shape check failed: K_A = 64, K_B = 32"
    )


LAYOUT_CONFLICT = """
import tilelang
import tilelang.language as T


@tilelang.jit
def gather(n: int, block: int = 1024):
    @T.prim_func
    def shuffled(x: T.Tensor((n,), "float32"), y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=256) as bx:
            a = T.alloc_fragment((block,), "float32")
            half = T.alloc_fragment((block // 2,), "float32")
            T.copy(x[bx * block], a)
            for i in T.Parallel(block):
                half[i // 2] = a[i] + a[(i * 7) % block]
            T.copy(half, y[bx * block])

    return shuffled


def custom_kernel(x):
    y = x.new_empty(x.shape)
    gather(x.numel())(x, y)
    return y
"""


def test_a_layout_tilelang_cannot_infer_fails_with_its_check_and_the_span(caches, tmp_path):
    solution = tmp_path / "layout.py"
    solution.write_text(LAYOUT_CONFLICT)
    with pytest.raises(tb.CompileFailed) as failed:
        tb.compile_solution(solution, [({}, lambda m: m.custom_kernel(_meta(4096)))], ARCH, tmp_path / "o")
    message = str(failed.value)
    assert message.startswith("InternalError: Check failed:"), message
    assert f"--> {solution}:" in message and "Traceback" not in message


UNDEFINED_CALL = """
import tilelang
import tilelang.language as T


@tilelang.jit
def calls(n: int, block: int = 256):
    @T.prim_func
    def undefined(x: T.Tensor((n,), "float32"), y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                y[bx * block + i] = T.call_extern("float32", "no_such_function", x[bx * block + i])

    return undefined


def custom_kernel(x):
    y = x.new_empty(x.shape)
    calls(x.numel())(x, y)
    return y
"""


@needs_nvcc
def test_cuda_that_nvcc_rejects_fails_with_nvccs_error_line(caches, tmp_path):
    solution = tmp_path / "undefined.py"
    solution.write_text(UNDEFINED_CALL)
    with pytest.raises(tb.CompileFailed) as failed:
        tb.compile_solution(solution, [({}, lambda m: m.custom_kernel(_meta(1024)))], ARCH, tmp_path / "o")
    first, quoted, *_ = str(failed.value).splitlines()
    assert first.endswith(': error: identifier "no_such_function" is undefined'), first
    assert "no_such_function(x[" in quoted and "warning" not in str(failed.value)


def test_nvccs_error_lines_are_kept_and_its_warnings_and_command_dropped():
    log = (
        "/pkg/tl_templates/cuda/cuda_fp8.h(139): warning #20012-D: __device__ annotation is ignored\n"
        "    fp8_e8_16_t() = default;\n"
        "                ^\n\n"
        '/tmp/x/tvm_kernels.cu(21): error: identifier "no_such_function" is undefined\n'
        "      Z[i] = no_such_function(X[i]);\n"
        "             ^\n\n"
        '1 error detected in the compilation of "/tmp/x/tvm_kernels.cu".\n'
        "Command: nvcc --cubin -O3 -arch=sm_90a -o /tmp/x/tvm_kernels.cubin /tmp/x/tvm_kernels.cu\n"
    )
    e = RuntimeError(f'extern "C" __global__ void k() {{}}\nCompilation error:\n{log}')
    assert tb.error_lines(e, Path("solution.py")) == "\n".join(
        [
            '/tmp/x/tvm_kernels.cu(21): error: identifier "no_such_function" is undefined',
            "      Z[i] = no_such_function(X[i]);",
            '1 error detected in the compilation of "/tmp/x/tvm_kernels.cu".',
        ]
    )


# --- the solution process may build -------------------------------------------------------------


def test_the_solution_process_of_a_tilelang_solution_may_write_its_cache_and_run_nvcc(tmp_path):
    from rung.backends import cuda_nvcc
    from rung.common.messages import JudgeHello
    from rung.judge.start import solution_start

    source = tmp_path / "solution.py"
    source.write_text("import tilelang\n")
    start, env = solution_start(
        JudgeHello(problem="", run_dir=str(tmp_path / "run"), source=""), source, interpret=False
    )
    cache = Path(env["TILELANG_CACHE_DIR"])
    assert any(cache.is_relative_to(w) for w in start.caches), (cache, start.caches)
    assert start.tool_dirs == cuda_nvcc.toolkit_dirs()


# --- on a GPU ------------------------------------------------------------------------------------

needs_a_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
CORRECT = sorted(PROBLEMS.glob("*/solutions/correct/tilelang_*.py"))


@pytest.mark.gpu
@needs_a_gpu
@pytest.mark.parametrize("solution", CORRECT, ids=lambda p: p.parents[2].name)
def test_on_a_gpu_each_shipped_solution_climbs_with_its_own_kernels(climb, solution):
    run = climb(solution.parents[2], solution)
    assert run.ok and run.verdict == "PASS", [(r.name, r.status.value, r.message) for r in run.rungs]
    guard = rung_of(run, "guard")
    assert guard.metrics["checks"]["kernel_launched"] == "ok", guard.message
    assert "tilelang" in guard.metrics["kernels"].values(), guard.metrics


# The targets on an H200: memory-bound examples at 90% of the roofline or more at their
# largest sizes; the matmul at 70% of the tensor-core ceiling at 4096^3 and 8192^3.
TARGETS = {"vector_add": (1, 0.90), "softmax": (3, 0.90), "matmul": (2, 0.70)}


@pytest.mark.gpu
@needs_a_gpu
@pytest.mark.parametrize("problem", sorted(TARGETS))
def test_on_a_gpu_the_shipped_solutions_reach_their_roofline_targets(climb, problem):
    solution = PROBLEMS / problem / "solutions" / "correct" / "tilelang_tuned.py"
    roof = rung_of(climb(PROBLEMS / problem, solution), "roofline")
    assert roof.status == Status.OK, roof.message
    last, target = TARGETS[problem]
    reached = [c["pct_of_roofline"] for c in roof.metrics["cases"][-last:]]
    assert min(reached) >= target, roof.metrics["cases"]
