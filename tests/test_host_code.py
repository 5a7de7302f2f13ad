"""Kernels as people write them: host code that touches CUDA builds without a GPU, and builds
that share an extension's name never share a folder.

The planted solutions (tests/fixtures/host_code/) double a vector the way NVIDIA's examples and
GPU MODE submissions are written: a device guard, the current stream's handle (as an integer,
or as a `cuda.CUstream`), the kernel or extension built inside custom_kernel on its first call.
Each has a broken twin (the line marked BROKEN) that must FAIL at compile naming that line; the
two CUDA C++ ones build under the same extension name. The CPU builds take 2 to 5 s each.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
import torch

from rung import backends
from rung.backends import build_cache, fake_cuda, torch_builds
from rung.backends.base import CompileFailed
from rung.backends.cuda_nvcc import NoToolkit
from rung.spec import Backend, Status
from tests.conftest import FIXTURES, rung_of

HOST_CODE = FIXTURES / "host_code"
TINY = FIXTURES / "tiny"
ARCH = "sm_90a"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA toolkit) is not on PATH")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory):
    """One build cache for the module: the CUDA C++ twins share it, as checks of one workspace do."""
    root = tmp_path_factory.mktemp("builds")
    build_cache.use(root)
    yield root
    build_cache._root = None


def build(solution: Path, out: Path) -> list:
    """The compile rung's build, as the solution process makes it: the tiny problem's benchmark
    case as meta tensors, handed to the solution as fake CUDA tensors."""
    backend = backends.detect(solution.read_text())
    x = torch.empty(4096, device="meta")
    call = ({"n": 4096}, lambda module: module.custom_kernel(*fake_cuda.placed((x,))))
    return backend.compile_solution(solution, [call], ARCH, out)


def broken_line(solution: Path) -> int:
    return next(
        i
        for i, line in enumerate(solution.read_text().splitlines(), 1)
        if "// BROKEN" in line or "# BROKEN" in line
    )


# --- the host code runs on fake CUDA -----------------------------------------------------------


def test_the_host_api_answers_as_a_device_of_the_arch_and_is_put_back_after():
    cuda_api = {name: getattr(torch.cuda, name) for name in fake_cuda.REPLACED}
    to_cuda = torch.Tensor.cuda
    with fake_cuda.host("sm_90a", Path("solution.py")):
        (x,) = fake_cuda.placed((torch.empty(3, 5, device="meta").t(),))
        assert x.is_cuda and x.shape == (5, 3) and x.stride() == (1, 5)
        with torch.cuda.device(x.device):
            stream = torch.cuda.current_stream(x.device)
            made = torch.empty(7, device=x.device, dtype=torch.half)
            assert stream.cuda_stream == 0 and made.is_cuda and torch.ones(2).cuda().is_cuda
            assert torch.cuda.get_device_capability() == (9, 0)
            assert torch.cuda.get_device_properties(x.device).multi_processor_count == 132
            torch.cuda.synchronize()
    assert {name: getattr(torch.cuda, name) for name in fake_cuda.REPLACED} == cuda_api
    assert torch.Tensor.cuda is to_cuda and fake_cuda.placed((1,)) == (1,)


@pytest.mark.parametrize(
    "host_code",
    ["float(x.sum())", "x.tolist()", "torch.nonzero(x)", "x.cpu().numpy()"],
)
def test_host_code_that_reads_a_tensors_values_cannot_be_built_here_and_says_where(host_code, tmp_path):
    solution = tmp_path / "reads.py"
    solution.write_text(f"import torch\n\n\ndef custom_kernel(x):\n    {host_code}\n")
    from rung.common.loader import import_file

    (x,) = (torch.empty(4, device="meta"),)
    with (
        pytest.raises(fake_cuda.NeedsGpu, match=r"at reads\.py:5 .*cannot fake") as raised,
        fake_cuda.host(ARCH, solution),
    ):
        import_file(solution, "reads").custom_kernel(*fake_cuda.placed((x,)))
    assert isinstance(raised.value, NoToolkit)  # the compile rung reads it as SKIPPED, never ERROR


def test_an_ordinary_failure_of_the_host_code_stays_the_solutions(tmp_path):
    with pytest.raises(ZeroDivisionError), fake_cuda.host(ARCH, tmp_path / "x.py"):
        _ = 1 / 0


# --- the planted solutions --------------------------------------------------------------------


# How CUPTI (torch.profiler) names each planted kernel on a GPU, launched on a test case's shape.
LAUNCHED = {
    "cuda": "twice_kernel(float const*, float*, long)",
    "cute": "kernel_cutlass_twice_kernel_tensorptrf32gmemalign16o51_tensorptrf32gmemalign16o51__0",
    "tilelang": "twice_main_kernel",
}
# Kernels of libraries a solution may call instead (cuBLAS's gemv and dot, torch's, cuBLASLt's).
LIBRARIES = [
    "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
    "cublasGemvParamsEx<int, cublasGemvTensorStrided<float const>, cublasGemvTensorStrided<float const>, "
    "cublasGemvTensorStrided<float>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStrided<float const>, "
    "cublasGemvTensorStrided<float const>, cublasGemvTensorStrided<float>, float>, float, float)",
    "void dot_kernel<float, 128, 0, cublasDotParams<cublasGemvTensor<float const>, "
    "cublasGemvTensorStrided<float> > >(cublasDotParams<cublasGemvTensor<float const>, "
    "cublasGemvTensorStrided<float> >)",
    "dot_kernel",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
    "nvjet_tst_64x8_64x16_4x1_v_bz_TNT",
]


@needs_nvcc
@pytest.mark.parametrize("language", ["cuda", "cute", "tilelang"])
def test_host_code_as_people_write_it_builds_and_its_broken_twin_fails_at_its_line(language, cache, tmp_path):
    correct, broken = HOST_CODE / f"host_{language}.py", HOST_CODE / f"host_{language}_broken.py"
    kernels = build(correct, tmp_path / "correct")
    assert kernels and all(k.registers > 0 for k in kernels)
    assert list((tmp_path / "correct").glob("*.sass")), "no SASS for the dump rung"
    # Recognised positively: the kernel it built, by the name CUPTI gives it; no library's.
    backend = backends.detect(correct.read_text())
    figures = [
        {"name": k.name, "constexprs": k.constexprs} for k in kernels
    ]  # as the compile rung keeps them
    assert backend.recognises(LAUNCHED[language], figures)
    assert not [name for name in LIBRARIES if backend.recognises(name, figures)]
    with pytest.raises(CompileFailed, match=rf"{broken.name}:{broken_line(broken)}\b"):
        build(broken, tmp_path / "broken")


def test_with_what_compile_built_a_library_kernel_is_torchs_not_the_solutions():
    from rung.backends import cuda_backend, tilelang_backend, triton_backend

    cuda_built = [{"name": "twice_kernel", "constexprs": {"mangled": "_Z12twice_kernelPKfPfl"}}]
    gemv, dot = LIBRARIES[0], LIBRARIES[2]
    assert backends.owner_of(gemv, [cuda_backend]) is Backend.CUDA  # by its name's look alone
    assert backends.owner_of(gemv, [cuda_backend], cuda_built) is Backend.TORCH
    assert backends.owner_of(LAUNCHED["cuda"], [cuda_backend, triton_backend], cuda_built) is Backend.CUDA
    tilelang_built = [{"name": "twice_main_kernel", "constexprs": {"symbol": "twice_main_kernel"}}]
    assert backends.owner_of(dot, [tilelang_backend]) is Backend.TILELANG
    assert backends.owner_of(dot, [tilelang_backend], tilelang_built) is Backend.TORCH
    assert backends.owner_of("twice_main_kernel", [tilelang_backend], tilelang_built) is Backend.TILELANG
    triton_built = [{"name": "twice_rows", "constexprs": {}}]  # Triton names a kernel after its function
    assert backends.owner_of(gemv, [triton_backend]) is Backend.TRITON  # any name not torch's, once
    assert backends.owner_of(gemv, [triton_backend], triton_built) is Backend.TORCH
    assert backends.owner_of("twice_rows", [triton_backend], triton_built) is Backend.TRITON


def test_where_compile_built_nothing_only_the_kernels_a_triton_source_declares_are_its_own():
    """torch.compile launches a user's @triton.jit kernel past the launcher compile intercepts;
    the source's declarations, read by the judge, then name the solution's kernels, and a
    source that declares none (triton imported, cuBLAS computing) owns no kernel at all."""
    from rung.backends import triton_backend

    source = (
        "import triton\nfrom triton import jit\n\n"
        "@triton.autotune(configs=[], key=[])\n@triton.jit\ndef tuned(x): pass\n\n"
        "@jit(do_not_specialize=['n'])\ndef plain(x, n): pass\n\n"
        "def host(x): return x\n"
    )
    assert [k["name"] for k in triton_backend.declared(source)] == ["tuned", "plain"]
    assert triton_backend.declared("def broken(:\n") == []
    none = triton_backend.declared((FIXTURES / "triton_calls_cublas.py").read_text())
    assert none == []
    assert backends.owner_of(LIBRARIES[0], [triton_backend], none) is Backend.TORCH
    declared = triton_backend.declared((FIXTURES / "unnameable.py").read_text())
    assert backends.owner_of("add_kernel", [triton_backend], declared) is Backend.TRITON


@needs_nvcc
def test_two_cuda_versions_under_one_extension_name_are_two_builds(cache, tmp_path):
    """As two checks of one workspace: the broken version fails, the correct one builds and
    is kept under its own key, then comes back from the cache as its own."""
    with pytest.raises(CompileFailed):
        build(HOST_CODE / "host_cuda_broken.py", tmp_path / "broken")
    (first,) = build(HOST_CODE / "host_cuda.py", tmp_path / "one")
    (again,) = build(HOST_CODE / "host_cuda.py", tmp_path / "two")
    assert again.cached and again.name == first.name == "twice_kernel"
    assert "2.0f * x[i];" in (tmp_path / "two" / "twice_host_ext.cu").read_text()
    assert not list((cache / "cuda").glob(f"*/{build_cache.STAGING}*")), "a staging folder was left"


@needs_nvcc
def test_the_cuda_version_climbs_to_compile_and_dump_on_the_cpu(climb):
    run = climb(TINY, HOST_CODE / "host_cuda.py")
    assert rung_of(run, "compile").status is Status.OK, rung_of(run, "compile").message
    assert rung_of(run, "dump").status is Status.OK, rung_of(run, "dump").message
    assert "twice_kernel" in rung_of(run, "compile").message


# --- torch's own builds, keyed ----------------------------------------------------------------


def fake_load_inline(
    name,
    cpp_sources,
    cuda_sources=None,
    functions=None,
    build_directory=None,
    verbose=False,
    is_python_module=True,
):
    """Builds as torch does, in `build_directory` under a lock file, a module named `name` (a .py
    file stands in for the library); a source with BROKEN in it fails half-way."""
    folder = Path(build_directory)
    (folder / "lock").write_text("")
    time.sleep(0.05)  # long enough for a concurrent build to be under way too
    if "BROKEN" in cpp_sources:
        (folder / f"{name}.so").write_text("half")
        raise RuntimeError(f"Error building extension '{name}'")
    (folder / f"{name}.py").write_text(f"SOURCE = {cpp_sources!r}\n")
    (folder / "lock").unlink()
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def keyed(tmp_path):
    before = build_cache._root
    build_cache.use(tmp_path / "builds")
    calls: list[str] = []

    @functools.wraps(fake_load_inline)  # torch's signature, as keyed reads it
    def counted(**kwargs):
        calls.append(kwargs["cpp_sources"])
        return fake_load_inline(**kwargs)

    yield torch_builds.keyed(counted, "load_inline"), calls
    build_cache._root = before


def staged_or_published(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in (root / torch_builds.KIND).glob("*/*"))


def test_concurrent_builds_under_one_name_each_load_their_own(keyed, tmp_path):
    load_inline, calls = keyed
    sources = ["correct one", "correct two", "BROKEN three"]
    got: dict[str, object] = {}

    def check(source: str) -> None:
        try:
            got[source] = load_inline("gemv_rows_ext", cpp_sources=source).SOURCE
        except RuntimeError as e:
            got[source] = e

    threads = [threading.Thread(target=check, args=(s,)) for s in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got["correct one"] == "correct one" and got["correct two"] == "correct two"
    assert isinstance(got["BROKEN three"], RuntimeError)
    published = staged_or_published(tmp_path / "builds")
    assert len(published) == 2 and not any(build_cache.STAGING in str(p) for p in published)
    # A later check finds its own build, imported from its folder: torch is not called again.
    assert load_inline("gemv_rows_ext", cpp_sources="correct two").SOURCE == "correct two"
    assert sorted(calls) == sorted(sources)


def test_a_killed_build_leaves_nothing_a_later_build_waits_on_or_reads(keyed, tmp_path):
    load_inline, calls = keyed
    digest = torch_builds.key(
        "load_inline",
        {
            "name": "ext",
            "cpp_sources": "src",
            "cuda_sources": None,
            "functions": None,
            "is_python_module": True,
        },
    )
    final = build_cache.folder(torch_builds.KIND, digest)
    killed = final.parent / f"{build_cache.STAGING}{digest[:8]}-killed"
    killed.mkdir(parents=True)
    (killed / "lock").write_text("")
    (killed / "ext.so").write_text("half")
    assert build_cache.lookup(torch_builds.KIND, digest) is None
    assert load_inline("ext", cpp_sources="src").SOURCE == "src"  # neither waited on nor read
    assert calls == ["src"] and build_cache.lookup(torch_builds.KIND, digest) == final
    old = time.time() - build_cache.STALE_S - 60
    os.utime(killed, (old, old))
    with pytest.raises(RuntimeError):  # any later build of its kind sweeps it
        load_inline("ext", cpp_sources="BROKEN")
    assert not killed.exists() and staged_or_published(tmp_path / "builds") == [
        final.relative_to(tmp_path / "builds")
    ]


def test_the_recorder_reads_a_keyed_builds_arguments_by_name_however_passed(monkeypatch):
    """On a GPU the keyed builds are installed before compile records a solution's calls: the
    recorder binds each call to torch's signature, so the name passed by position is found."""
    from torch.utils import cpp_extension

    from rung.backends import cuda_record

    monkeypatch.setattr(cpp_extension, "load_inline", cpp_extension.load_inline)
    monkeypatch.setattr(cpp_extension, "load", cpp_extension.load)
    torch_builds.install()
    with cuda_record.recording(None) as found:
        cpp_extension.load_inline("twice_ext", "", cuda_sources="__global__ void k() {}", functions=["k"])
    assert [(e.name, e.functions) for e in found] == [("twice_ext", ["k"])]


def test_a_build_the_solution_places_itself_is_torchs_own(keyed, tmp_path):
    load_inline, _ = keyed
    own = tmp_path / "own"
    own.mkdir()
    assert load_inline("ext", cpp_sources="mine", build_directory=str(own)).SOURCE == "mine"
    assert (own / "ext.py").is_file() and not (tmp_path / "builds").exists()


def test_the_key_of_a_load_reads_its_files_and_the_headers_beside_them(tmp_path):
    source, header = tmp_path / "k.cu", tmp_path / "k.cuh"
    source.write_text('#include "k.cuh"\n')
    header.write_text("#define SCALE 2\n")
    given = {"name": "k", "sources": [str(source)], "is_python_module": True}
    before = torch_builds.key("load", given)
    header.write_text("#define SCALE 3\n")
    assert torch_builds.key("load", given) != before


# --- on a GPU (not run on a CPU machine) -------------------------------------------------------

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")


@pytest.mark.parametrize("language", ["cuda", "cute", "tilelang"])
@pytest.mark.gpu
@needs_gpu
def test_on_a_gpu_host_code_as_people_write_it_passes_and_its_twin_fails_at_its_line(climb, language):
    package = {"cute": "cutlass", "tilelang": "tilelang"}.get(language)
    if package and importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed here (the {language} extra)")
    correct, broken = HOST_CODE / f"host_{language}.py", HOST_CODE / f"host_{language}_broken.py"
    run = climb(TINY, correct)
    assert run.verdict == "PASS", [(r.name, r.status.value, r.message) for r in run.rungs]
    failed = rung_of(climb(TINY, broken), "compile")
    assert failed.status is Status.FAILED and f"{broken.name}:{broken_line(broken)}" in failed.message


@pytest.mark.gpu
@needs_gpu
def test_on_a_gpu_three_checks_at_once_under_one_extension_name_get_their_own_verdicts(tmp_path):
    """As `optimize --parallel` checks an agent's versions: one workspace, one build cache, three
    checks at once, each version building its own source as `twice_host_ext`."""
    import json
    import subprocess
    import sys

    other = tmp_path / "host_cuda_128.py"
    other.write_text((HOST_CODE / "host_cuda.py").read_text().replace("threads = 256", "threads = 128"))
    versions = [HOST_CODE / "host_cuda.py", HOST_CODE / "host_cuda_broken.py", other]
    env = {**os.environ, "RUNG_SKIP": "profile,scopes"}
    checks = [
        subprocess.Popen(
            [sys.executable, "-m", "rung", "check", str(TINY), str(v), "--json", "-w", str(tmp_path / "ws")],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for v in versions
    ]
    verdicts = [json.loads(c.communicate(timeout=600)[0])["solutions"][0] for c in checks]
    assert verdicts[0]["ok"] and verdicts[2]["ok"], verdicts
    compile_of_broken = next(r for r in verdicts[1]["rungs"] if r["name"] == "compile")
    assert (
        compile_of_broken["status"] == "FAILED" and "host_cuda_broken.py:24" in compile_of_broken["message"]
    )
