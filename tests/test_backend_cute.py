"""The CuTe DSL backend: detection, builds for sm_90a without a GPU and the SASS facts of each
shipped CuTe solution, compile errors in the DSL's own words, and (on a GPU) the full ladder.

Each shipped solution is built once per module (a CuTe build takes seconds) on the meta tensors
the compile rung passes, at one benchmark case.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch

from rung import backends
from rung.backends import build_cache, cute_backend, triton_backend
from rung.backends.base import BuiltKernel
from rung.spec import Status
from tests.conftest import PROBLEMS, rung_of

pytest.importorskip("cutlass.cute", reason="nvidia-cutlass-dsl is not installed (pip install rung[cute])")

ARCH = "sm_90a"


@pytest.fixture(scope="module", autouse=True)
def build_cache_here(tmp_path_factory: pytest.TempPathFactory):
    """Builds kept in a folder of this module's own, not the user's cache."""
    saved = build_cache._root
    build_cache.use(tmp_path_factory.mktemp("builds"))
    yield
    build_cache._root = saved


def _meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(*shape, device="meta", dtype=dtype)


def build(solution: Path, out: Path, case: dict[str, Any], *inputs: Any) -> list[BuiltKernel]:
    return cute_backend.compile_solution(solution, [(case, lambda m: m.custom_kernel(*inputs))], ARCH, out)


def text(kernel: BuiltKernel, suffix: str) -> str:
    return Path(next(a for a in kernel.artifacts if a.endswith(suffix))).read_text()


@pytest.fixture(scope="module")
def vector_add(tmp_path_factory: pytest.TempPathFactory) -> BuiltKernel:
    n = 2**28
    (kernel,) = build(
        PROBLEMS / "vector_add/solutions/correct/cute.py",
        tmp_path_factory.mktemp("cute_vector_add"),
        {"n": n},
        _meta(n),
        _meta(n),
    )
    return kernel


@pytest.fixture(scope="module")
def softmax(tmp_path_factory: pytest.TempPathFactory) -> BuiltKernel:
    (kernel,) = build(
        PROBLEMS / "softmax/solutions/correct/cute.py",
        tmp_path_factory.mktemp("cute_softmax"),
        {"rows": 4096, "cols": 16384},
        _meta(4096, 16384),
    )
    return kernel


@pytest.fixture(scope="module")
def matmul(tmp_path_factory: pytest.TempPathFactory) -> BuiltKernel:
    (kernel,) = build(
        PROBLEMS / "matmul/solutions/correct/cute.py",
        tmp_path_factory.mktemp("cute_matmul"),
        {"m": 4096, "n": 4096, "k": 4096},
        _meta(4096, 4096, dtype=torch.float16),
        _meta(4096, 4096, dtype=torch.float16),
    )
    return kernel


# --- detection ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    ["import cutlass\nimport cutlass.cute as cute\n", "from cutlass import cute\n", "import cutlass.torch\n"],
)
def test_a_cutlass_import_is_a_cute_solution(source):
    assert backends.detect("import torch\n" + source) is cute_backend


def test_a_cute_kernel_with_a_triton_epilogue_names_both_cute_first():
    found = backends.detect_all("import torch\nimport triton\nimport cutlass.cute as cute\n")
    assert found == [cute_backend, triton_backend]


def test_cute_kernels_are_recognised_by_the_dsl_s_naming():
    assert cute_backend.owns_kernel("kernel_cutlass_add_kernel_tensorptrf32gmemalign16o1_0")
    for other in (
        "add_kernel",
        "void at::native::vectorized_elementwise_kernel<4>",
        "cutlass_80_tensorop_gemm",
    ):
        assert not cute_backend.owns_kernel(other), other


def test_hopper_and_later_are_built_arch_specific_as_the_dsl_does_on_a_gpu():
    assert [cute_backend.dsl_arch(a) for a in ("sm_90", "sm_90a", "sm_100", "sm_80")] == [
        "sm_90a",
        "sm_90a",
        "sm_100a",
        "sm_80",
    ]


# --- builds of the shipped solutions --------------------------------------------------------------


def test_every_stage_is_kept_and_the_ptx_targets_the_arch(vector_add):
    suffixes = {Path(a).suffix for a in vector_add.artifacts}
    assert suffixes == {".mlir", ".ptx", ".cubin", ".sass"}
    assert ".target sm_90a" in text(vector_add, ".ptx")
    assert "cute." in text(vector_add, ".mlir")  # the CuTe dialect, before lowering
    assert vector_add.signature["symbol"].startswith("kernel_cutlass_add_kernel")


def test_vector_add_moves_16_byte_vectors_of_global_memory(vector_add):
    # Meta tensors reach the DSL as CUDA tensors: global, not generic, accesses.
    sass = text(vector_add, ".sass")
    assert re.search(r"\bLDG\.E\.128\b", sass) and re.search(r"\bSTG\.E\.128\b", sass)
    assert "ld.global.v4" in text(vector_add, ".ptx")
    assert vector_add.max_threads == 256 and vector_add.registers > 0
    assert vector_add.spill_instructions == 0 and vector_add.local_bytes == 0


def test_softmax_keeps_a_16k_row_in_registers_without_spilling(softmax):
    sass = text(softmax, ".sass")
    assert re.search(r"\bLDG\.E\.128\b", sass) and re.search(r"\bSTG\.E\.128\b", sass)
    assert softmax.spill_instructions == 0 and softmax.local_bytes == 0
    assert softmax.case == {"rows": 4096, "cols": 16384}


def test_matmul_uses_hopper_tensor_cores_fed_by_tma(matmul):
    sass = text(matmul, ".sass")
    assert re.search(r"\bHGMMA\.64x256x16\.F32\b", sass)
    assert re.search(r"\bUTMALDG\b", sass)
    assert matmul.shared_bytes > 4 * 48 * 1024  # the 4-stage ring, as launched
    assert matmul.max_threads == 384 and matmul.spill_instructions == 0


def test_a_second_build_of_the_same_trace_is_read_from_the_build_cache(vector_add, tmp_path):
    assert not vector_add.cached
    n = 2**28
    (again,) = build(
        PROBLEMS / "vector_add/solutions/correct/cute.py", tmp_path, {"n": n}, _meta(n), _meta(n)
    )
    assert again.cached and again.name == vector_add.name and again.registers == vector_add.registers
    assert text(again, ".sass") == text(vector_add, ".sass")
    assert {Path(a).suffix for a in again.artifacts} == {".mlir", ".ptx", ".cubin", ".sass"}
    # Another arch is another build.
    (other,) = cute_backend.compile_solution(
        PROBLEMS / "vector_add/solutions/correct/cute.py",
        [({"n": n}, lambda m: m.custom_kernel(_meta(n), _meta(n)))],
        "sm_100a",
        tmp_path / "sm_100a",
    )
    assert not other.cached and ".target sm_100a" in text(other, ".ptx")


def test_the_wrong_vector_add_builds_its_failure_is_at_run(tmp_path):
    (kernel,) = build(
        PROBLEMS / "vector_add/solutions/wrong/cute_no_tail.py", tmp_path, {"n": 1}, _meta(1), _meta(1)
    )
    assert re.search(r"\bLDG\.E\.128\b", text(kernel, ".sass"))


def test_a_build_leaves_the_dsl_as_it_found_it(tmp_path):
    import cutlass.torch as cutlass_torch
    from cutlass.base_dsl.jit_executor import JitCompiledFunction
    from cutlass.cute.runtime import _Tensor
    from cutlass.cutlass_dsl import CuTeDSL
    from cutlass.cutlass_dsl.cutlass import KernelLauncher

    envar = CuTeDSL._get_dsl().envar

    def state() -> tuple[Any, ...]:
        flags = (envar._arch, envar.keep_ptx, envar.keep_cubin, envar.keep_ir_clean, envar.dump_dir)
        hooks = (JitCompiledFunction.__call__, JitCompiledFunction.run_compiled_program, _Tensor.__init__)
        return (*flags, *hooks, KernelLauncher.launch, cutlass_torch.current_stream)

    before = state()
    assert build(_broken(tmp_path), tmp_path / "out", {"n": 32}, _meta(32), _meta(32))
    assert state() == before


# --- errors ---------------------------------------------------------------------------------------

KERNEL = """\
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def add_kernel(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    i, _, _ = cute.arch.thread_idx()
    c[i] = {body}


@cute.jit
def add(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    add_kernel(a, b, c).launch(grid=(1, 1, 1), block=(32, 1, 1))


def custom_kernel(x, y):
    {host}
    out = torch.empty_like(x)
    add(from_dlpack(x), from_dlpack(y), from_dlpack(out))
    return out
"""


def _broken(tmp_path: Path, body: str = "a[i] + b[i]", host: str = "pass") -> Path:
    path = tmp_path / "broken.py"
    path.write_text(KERNEL.format(body=body, host=host))
    return path


def _fails(path: Path, tmp_path: Path) -> str:
    with pytest.raises(cute_backend.CompileFailed) as failed:
        build(path, tmp_path / "out", {"n": 32}, _meta(32), _meta(32))
    message = str(failed.value)
    assert "Traceback" not in message and "\x1b[" not in message  # the DSL's words, no colours
    return message


def test_a_type_error_in_a_kernel_fails_compile_with_the_solution_s_line(tmp_path):
    message = _fails(_broken(tmp_path, body="a[i] + b"), tmp_path)
    assert message.splitlines()[0].startswith("broken.py:9 in add_kernel: TypeError: unsupported operand")
    assert "c[i] = a[i] + b" in message


def test_an_undefined_name_fails_compile_with_the_dsl_s_own_message(tmp_path):
    message = _fails(_broken(tmp_path, body="a[i] + missing"), tmp_path)
    assert "name 'missing' is not defined" in message
    assert re.search(r"broken\.py:9\b", message)


def test_a_failure_of_the_host_code_is_not_a_compile_error(tmp_path):
    """Host code that cannot run on meta tensors raises as it is: the compile rung then falls back
    to a test case on the judge's device."""
    with pytest.raises(RuntimeError, match="host side"):
        build(
            _broken(tmp_path, host="raise RuntimeError('host side')"),
            tmp_path / "out",
            {},
            _meta(32),
            _meta(32),
        )


# --- the ladder, on a GPU -------------------------------------------------------------------------

CORRECT = sorted(PROBLEMS.glob("*/solutions/correct/cute.py"))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
@pytest.mark.parametrize("solution", CORRECT, ids=lambda p: p.parents[2].name)
def test_each_cute_solution_climbs_the_whole_ladder(climb, solution):
    run = climb(solution.parents[2], solution)
    assert run.ok, "\n".join(f"{r.name}: {r.status.value} {r.message}" for r in run.rungs)
    assert run.solution.backend == "cute"
    compiled = rung_of(run, "compile")
    assert compiled.status == Status.OK and any(a.endswith(".sass") for a in compiled.artifacts)
    assert rung_of(run, "guard").status == Status.OK  # kernel_launched saw the CuTe kernels


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_the_cute_vector_add_without_its_tail_fails_at_run(climb):
    run = climb(PROBLEMS / "vector_add", PROBLEMS / "vector_add/solutions/wrong/cute_no_tail.py")
    first_bad = next(r for r in run.rungs if r.status.bad)
    assert first_bad.name == "run" and "never written" in first_bad.message, first_bad.message
