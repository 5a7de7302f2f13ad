"""The CUDA C++ backend: detection, builds with nvcc for sm_90a without a GPU, their SASS facts,
errors at the solution's own line, the build cache; on a GPU, the shipped solutions on the ladder.

The builds need nvcc (CI's machine has it; they skip, saying so, where it is missing). Each build
of a source without torch's headers takes about a second; the one test that includes them (the
stand-in headers) about 11 s of one core, and the two climbs about 15 s each.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import torch

from rung import backends
from rung.backends import build_cache, cuda_backend, cuda_nvcc, cuda_record
from rung.derived.sass import facts
from rung.spec import Status
from tests.conftest import PROBLEMS, Climber, rung_of

ARCH = "sm_90a"
SHIPPED = sorted(PROBLEMS.glob("*/solutions/correct/cuda.py"))
WRONG = sorted(PROBLEMS.glob("*/solutions/wrong/cuda_*.py"))
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA toolkit) is not on PATH")

BROKEN = '''\
import torch
from torch.utils.cpp_extension import load_inline

CUDA = r"""
__global__ void scale(float* x, long n) {
    long i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = undefined_thing * x[i];
}
"""

ext = load_inline("broken_ext", cpp_sources="", cuda_sources=CUDA, no_implicit_headers=True)


def custom_kernel(x, y):
    return ext.scale(x)
'''
BROKEN_LINE = 7  # where `undefined_thing` is, in the .py

SMALL = """\
from torch.utils.cpp_extension import load_inline

ext = load_inline(
    "small_ext",
    cpp_sources="",
    cuda_sources="__global__ void __launch_bounds__(128) twice(float* x) { x[threadIdx.x] *= 2.0f; }",
    no_implicit_headers=True,
)


def custom_kernel(x):
    return ext.twice(x)
"""


@pytest.fixture
def cache(tmp_path: Path):
    """A build cache of the test's own, so that every first build is cold."""
    build_cache.use(tmp_path / "cache")
    yield tmp_path / "cache"
    build_cache._root = None


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory):
    """Each shipped solution built once for this module (the softmax's ten kernels take seconds)."""
    made: dict[Path, list] = {}

    def build(solution: Path) -> list:
        if solution not in made:
            folder = tmp_path_factory.mktemp(solution.parents[2].name)
            build_cache.use(folder / "cache")
            try:
                made[solution] = cuda_backend.compile_solution(
                    solution, [({"n": 1}, lambda m: None)], ARCH, folder / "out"
                )
            finally:
                build_cache._root = None
        return made[solution]

    return build


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def sass_of(kernels: list) -> dict:
    sass = {a for k in kernels for a in k.artifacts if a.endswith(".sass")}
    assert len(sass) == 1, sass
    return facts(Path(sass.pop()).read_text())


# Detection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "from torch.utils.cpp_extension import load_inline",
        "import torch.utils.cpp_extension as ext",
        "from torch.utils import cpp_extension",
        "import torch\nfrom torch.utils.cpp_extension import load",
    ],
)
def test_a_source_that_uses_torch_cpp_extension_is_cuda(source):
    assert backends.detect(source) is cuda_backend


def test_plain_torch_and_triton_are_not_cuda():
    assert backends.detect("import torch\nimport torch.utils.checkpoint") is not cuda_backend
    assert (
        backends.detect((PROBLEMS / "vector_add/solutions/correct/torch_add.py").read_text()).BACKEND.value
        == "torch"
    )
    assert (
        backends.detect((PROBLEMS / "vector_add/solutions/correct/tuned.py").read_text()).BACKEND.value
        == "triton"
    )


def test_a_solution_mixing_cuda_and_triton_has_both_backends():
    found = backends.detect_all("import triton\nfrom torch.utils.cpp_extension import load_inline")
    assert [b.BACKEND.value for b in found] == ["cuda", "triton"]


def test_kernels_are_recognised_by_their_cxx_names():
    assert cuda_backend.owns_kernel("add_vec4(float4 const*, float4 const*, float4*, long)")
    assert cuda_backend.owns_kernel("void softmax_rows<256, 4, 4>(float const*, float*, int, long)")
    assert cuda_backend.owns_kernel("_Z8add_vec4PK6float4S1_PS_l")
    assert not cuda_backend.owns_kernel("add_kernel")  # Triton's: a bare name
    assert not cuda_backend.owns_kernel(
        "void at::native::vectorized_elementwise_kernel<4, float>(int, float)"
    )
    assert not cuda_backend.owns_kernel("void cutlass::Kernel2<cutlass_80_wmma>(Params)")


# Pieces: flags, ptxas's figures, errors --------------------------------------------------


def test_arch_flags_and_the_sources_own_arch_flags_dropped():
    assert cuda_nvcc.arch_flags("sm_90a") == ["-gencode", "arch=compute_90a,code=sm_90a"]
    assert cuda_nvcc.arch_flags("sm_100") == ["-gencode", "arch=compute_100,code=sm_100"]
    with pytest.raises(cuda_backend.CompileFailed, match="sm_90a"):
        cuda_nvcc.arch_flags("hopper")
    flags = [
        "-O3",
        "-arch=sm_80",
        "-gencode",
        "arch=compute_80,code=sm_80",
        "--use_fast_math",
        "-code",
        "sm_80",
    ]
    assert cuda_nvcc.without_arch(flags) == ["-O3", "--use_fast_math"]


def test_ptxas_figures_per_kernel():
    log = textwrap.dedent("""\
        ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90a'
        ptxas info    : Function properties for _Z1kPf
            8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
        ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 360 bytes cmem[0]
        ptxas info    : Compiling entry function '_Z1jv' for 'sm_90a'
        ptxas info    : Used 6 registers
        """)
    figures = cuda_nvcc.ptxas_figures(log)
    k, j = figures["_Z1kPf"], figures["_Z1jv"]
    assert (k.registers, k.shared_bytes, k.stack_bytes, k.spill_store_bytes, k.spill_load_bytes) == (
        40,
        2048,
        8,
        4,
        12,
    )
    assert (j.registers, j.shared_bytes) == (6, 0)


def test_max_threads_from_launch_bounds_else_from_registers():
    ptx = ".visible .entry _Z1kPf(\n\t.param .u64 p\n)\n.maxntid 128, 2, 1\n{\n}\n.visible .entry _Z1jv()\n{\n}\n"
    assert cuda_nvcc.max_threads(ptx, "_Z1kPf", 40) == 256
    assert cuda_nvcc.max_threads(ptx, "_Z1jv", 32) == 1024
    assert cuda_nvcc.max_threads(ptx, "_Z1jv", 128) == 512  # 64K registers / 128 a thread
    assert cuda_nvcc.max_threads(ptx, "_Z1jv", 255) == 256  # 255 rounds up to 256 a thread


def test_demangled_names_split_into_kernel_and_parameters():
    assert cuda_nvcc.split_signature("void k<256, 4>(float const*, Pair<int, int>, long)") == (
        "k<256, 4>",
        ["float const*", "Pair<int, int>", "long"],
    )
    assert cuda_nvcc.split_signature("twice(float*)") == ("twice", ["float*"])
    assert cuda_nvcc.split_signature("empty()") == ("empty", [])


def test_nvcc_errors_keep_the_error_lines_mapped_and_drop_the_rest():
    log = textwrap.dedent("""\
        /opt/torch/include/c10/core/AutogradState.h(89): warning #3306-D: a default bit-field initializer is a C++20 feature
            bool view_replay_enabled_ : 1 = false;
                                          ^

        /tmp/out/ext.cu(12): error: identifier "foo" is undefined
              foo();
              ^

        /tmp/out/other.cuh(3): error: expected a ";"

        2 errors detected in the compilation of "/tmp/out/ext.cu".
        """)
    mapped = cuda_nvcc.errors(
        log, lambda file, line: f"solution.py:{line + 40}" if file.endswith("ext.cu") else None
    )
    assert mapped.splitlines() == [
        'solution.py:52: error: identifier "foo" is undefined',
        "      foo();",
        "      ^",
        'other.cuh:3: error: expected a ";"',
    ]


def test_host_compiler_and_ptxas_errors_are_kept_too():
    log = "ext.cu:3:10: fatal error: missing.h: No such file or directory\n    3 | #include <missing.h>\n"
    log += (
        "ptxas info    : Used 8 registers\nptxas error   : Entry function '_Z1kv' uses too much shared data\n"
    )
    kept = cuda_nvcc.errors(log, lambda file, line: None).splitlines()
    assert kept[0] == "ext.cu:3: fatal error: missing.h: No such file or directory"
    assert kept[-1].startswith("ptxas error   : Entry function")
    assert not any("ptxas info" in line for line in kept)


def test_an_inline_source_line_maps_to_its_literal_in_the_solution(tmp_path):
    solution = write(tmp_path, "broken.py", BROKEN)
    with cuda_record.recording(solution) as found:
        exec(compile(BROKEN, str(solution), "exec"), {})
    (ext,) = found
    line = ext.source.splitlines().index("    if (i < n) x[i] = undefined_thing * x[i];") + 1
    assert ext.origin(line) == (str(solution), BROKEN_LINE)


def test_load_inline_adds_torchs_headers_unless_told_not_to(tmp_path):
    with cuda_record.recording(None) as found:
        from torch.utils.cpp_extension import load_inline

        ext = load_inline("a", "", cuda_sources=["__global__ void k() {}"], functions="k")
        load_inline("b", "", cuda_sources="__global__ void k() {}", no_implicit_headers=True)
        load_inline("c", "int f() { return 1; }")  # C++ only: nothing for nvcc
        with pytest.raises(cuda_record.NotBuilt):
            ext.k()
    assert [e.name for e in found] == ["a", "b"]
    assert found[0].source.splitlines()[:3] == list(cuda_record.IMPLICIT_CUDA_HEADERS)
    assert found[0].functions == ["k"]
    assert found[1].source == "__global__ void k() {}"


# Builds ---------------------------------------------------------------------------------


@needs_nvcc
@pytest.mark.parametrize("solution", SHIPPED + WRONG, ids=lambda p: f"{p.parents[2].name}/{p.name}")
def test_each_shipped_solution_builds_for_sm90a(solution, shipped):
    kernels = shipped(solution)
    assert kernels
    cubin = Path(next(a for a in kernels[0].artifacts if a.endswith(".cubin")))
    for suffix in ("cu", "ptx", "cubin", "sass", "ptxas.log"):
        assert cubin.with_suffix(f".{suffix}").is_file(), suffix
    assert ".target sm_90a" in cubin.with_suffix(".ptx").read_text()
    for k in kernels:
        assert 0 < k.registers <= 255 and k.local_bytes == 0 and k.spill_instructions == 0, k
        assert 0 < k.max_threads <= 1024 and k.case == {"n": 1} and not k.cached and k.build_s > 0
        assert k.signature and k.constexprs["mangled"].startswith("_Z")


@needs_nvcc
def test_vector_add_moves_16_byte_vectors(shipped):
    kernels = shipped(PROBLEMS / "vector_add/solutions/correct/cuda.py")
    assert {k.name for k in kernels} == {"add_vec4", "add_scalar"}
    assert {k.max_threads for k in kernels} == {256}  # __launch_bounds__(THREADS)
    access = sass_of(kernels)["global_access_bits"]
    assert access["ldg_128"] >= 8 and access["stg_128"] >= 4, access


@needs_nvcc
def test_softmax_reads_and_writes_16_byte_vectors_without_spilling(shipped):
    kernels = shipped(PROBLEMS / "softmax/solutions/correct/cuda.py")
    widest = next(k for k in kernels if k.name == "softmax_rows<1024, 4, 4>")
    assert widest.max_threads == 1024 and widest.registers <= 64 and widest.shared_bytes == 128
    found = sass_of(kernels)
    assert found["global_access_bits"]["ldg_128"] > 0 and found["global_access_bits"]["stg_128"] > 0
    assert found["local_memory_ops"] == 0


@needs_nvcc
def test_matmul_runs_on_tensor_cores(shipped):
    kernels = shipped(PROBLEMS / "matmul/solutions/correct/cuda.py")
    assert {k.name for k in kernels} == {"matmul_mma<true>", "matmul_mma<false>"}
    found = sass_of(kernels)
    assert found["tensor_core"].get("HMMA", 0) >= 64, found["tensor_core"]  # 32 per K step of each
    sass = Path(next(a for a in kernels[0].artifacts if a.endswith(".sass"))).read_text()
    assert "LDGSTS" in sass and "LDSM.16.MT88.4" in sass  # cp.async, and ldmatrix.trans for b


@needs_nvcc
def test_pipelined_prefix_sum_loads_in_bulk_without_spilling(shipped):
    kernels = shipped(PROBLEMS / "prefix_sum/solutions/correct/cuda_pipelined.py")
    config = "pipelined::Config<8192, 3, 2, 8, 4, true, false>"
    assert {k.name for k in kernels} == {
        f"pipelined::scan_pipelined<{config}, {a}>" for a in ("true", "false")
    }
    for k in kernels:  # 8 consumer warps and a producer; two blocks an SM fit 65536 registers
        assert (
            k.max_threads == 288 and k.registers <= 112 and k.local_bytes == 0 and k.spill_instructions == 0
        ), k
    sass = Path(next(a for a in kernels[0].artifacts if a.endswith(".sass"))).read_text()
    assert "UBLKCP.S.G" in sass and "SYNCS.PHASECHK.TRANS64.TRYWAIT" in sass  # cp.async.bulk, mbarrier waits
    assert sass_of(kernels)["global_access_bits"]["stg_128"] >= 8


@needs_nvcc
def test_a_second_build_of_the_same_source_comes_from_the_cache(tmp_path, cache):
    solution = write(tmp_path, "small.py", SMALL)
    (cold,) = cuda_backend.compile_solution(solution, [], ARCH, tmp_path / "first")
    (warm,) = cuda_backend.compile_solution(solution, [], ARCH, tmp_path / "second")
    assert not cold.cached and warm.cached and warm.build_s < cold.build_s
    assert (warm.name, warm.registers, warm.max_threads) == (cold.name, cold.registers, 128)
    assert (tmp_path / "second" / "small_ext.sass").read_text() == (
        tmp_path / "first" / "small_ext.sass"
    ).read_text()
    (other,) = cuda_backend.compile_solution(solution, [], "sm_80", tmp_path / "third")
    assert not other.cached  # another arch is another build


@needs_nvcc
def test_a_solution_that_builds_on_its_first_call_is_built(tmp_path, cache):
    lazy = SMALL.replace("ext = load_inline(", "def ext_of():\n    return load_inline(").replace(
        "return ext.twice(x)", "return ext_of().twice(x)"
    )
    solution = write(tmp_path, "lazy.py", lazy)
    calls = [({"n": 4}, lambda module: module.custom_kernel(torch.empty(4, device="meta")))]
    (kernel,) = cuda_backend.compile_solution(solution, calls, ARCH, tmp_path / "out")
    assert kernel.name == "twice" and kernel.case == {"n": 4}


@needs_nvcc
def test_a_cu_file_given_to_load_is_built_where_it_is(tmp_path, cache):
    (tmp_path / "kernels").mkdir()
    write(tmp_path / "kernels", "scale.cuh", "constexpr float FACTOR = 3.0f;\n")
    write(
        tmp_path / "kernels",
        "scale.cu",
        '#include "scale.cuh"\n__global__ void scale(float* x) { x[0] *= FACTOR; }\n',
    )
    solution = write(
        tmp_path,
        "with_file.py",
        "import os\nfrom torch.utils.cpp_extension import load\n"
        "ext = load('file_ext', [os.path.join(os.path.dirname(__file__), 'kernels', 'scale.cu')])\n",
    )
    (kernel,) = cuda_backend.compile_solution(solution, [], ARCH, tmp_path / "out")
    assert kernel.name == "scale" and (tmp_path / "out" / "file_ext.cu").is_file()
    write(tmp_path / "kernels", "scale.cuh", "constexpr float FACTOR = 4.0f;\n")
    (again,) = cuda_backend.compile_solution(solution, [], ARCH, tmp_path / "out")
    assert not again.cached  # a header beside it changed


@needs_nvcc
def test_a_syntax_error_is_nvccs_own_line_at_the_solutions_line(tmp_path, cache):
    solution = write(tmp_path, "broken.py", BROKEN)
    with pytest.raises(cuda_backend.CompileFailed) as failed:
        cuda_backend.compile_solution(solution, [], ARCH, tmp_path / "out")
    first = str(failed.value).splitlines()[0]
    assert first == f'broken.py:{BROKEN_LINE}: error: identifier "undefined_thing" is undefined', str(
        failed.value
    )


@needs_nvcc
def test_torch_headers_build_on_a_machine_without_cuda_torch(tmp_path, cache):
    """load_inline puts <torch/types.h> above the source; the kernel here includes more of
    torch's CUDA headers, which a CPU wheel or a bare toolkit lack in part (the stand-ins)."""
    solution = write(
        tmp_path,
        "with_torch.py",
        'from torch.utils.cpp_extension import load_inline\nCUDA = r"""\n'
        "#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAGuard.h>\n"
        "__global__ void twice(at::Half* x) { x[threadIdx.x] = x[threadIdx.x] * at::Half(2.0f); }\n"
        '"""\next = load_inline("torch_ext", cpp_sources="", cuda_sources=CUDA)\n',
    )
    (kernel,) = cuda_backend.compile_solution(solution, [], ARCH, tmp_path / "out")
    assert kernel.name == "twice" and kernel.signature == {"0": "c10::Half*"}


# On the ladder ---------------------------------------------------------------------------


@needs_nvcc
def test_check_fails_compile_at_the_solutions_line_and_builds_once_per_workspace(tmp_path):
    climb = Climber(tmp_path / "workspace")
    vector_add = PROBLEMS / "vector_add"
    broken = climb(vector_add, write(tmp_path, "broken.py", BROKEN))
    compiled = rung_of(broken, "compile")
    assert rung_of(broken, "load").status == Status.OK  # imported without building anything
    assert compiled.status == Status.FAILED, compiled.message
    assert f'broken.py:{BROKEN_LINE}: error: identifier "undefined_thing" is undefined' in compiled.message
    assert "Traceback" not in compiled.message
    cold, warm = (
        rung_of(climb(vector_add, vector_add / "solutions/correct/cuda.py"), "compile") for _ in range(2)
    )
    assert cold.status == warm.status == Status.OK, cold.message
    assert not cold.metrics["cached"] and cold.metrics["build_s"] > 0
    assert warm.metrics["cached"] and warm.metrics["build_s"] < cold.metrics["build_s"], warm.metrics
    assert all(k["cached"] and "build_s" in k for k in warm.metrics["kernels"])
    assert "(cached)" in warm.message


# On a GPU --------------------------------------------------------------------------------


@pytest.mark.parametrize("solution", SHIPPED, ids=lambda p: p.parents[2].name)
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_shipped_cuda_solutions_climb_the_whole_ladder(climb, solution):
    run = climb(solution.parents[2], solution)
    assert run.verdict == "PASS", [(r.name, r.status.value, r.message) for r in run.rungs]
    compiled = rung_of(run, "compile")
    assert compiled.metrics["import_build_s"] > 0  # torch's build at import, shown as compile time
    assert rung_of(run, "guard").status == Status.OK  # its own kernel launched
    for name in ("bench", "roofline", "trace"):
        assert rung_of(run, name).status == Status.OK, name


@pytest.mark.parametrize("solution", WRONG, ids=lambda p: p.parents[2].name)
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_wrong_cuda_solutions_fail_for_their_reason(climb, solution):
    import yaml

    want = yaml.safe_load((solution.parent / "expected.yml").read_text())[solution.name]
    run = climb(solution.parents[2], solution)
    named = rung_of(run, want["rung"])
    assert named.status == Status.FAILED and want["says"] in named.message, named.message
