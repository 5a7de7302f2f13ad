"""The built-in context sources: found where this machine has them, and useful once indexed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from rung.context import ContextIndex
from rung.context_sources import CUDA_TOOLKIT, builtin_sources, cuda_toolkit


def _toolkit(root: Path, headers: bool) -> Path:
    """A CUDA toolkit's shape under `root`: bin/nvcc, and with `headers` the files the sources index."""
    (root / "bin").mkdir(parents=True)
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    if headers:
        ptx = root / "include" / "cccl" / "cuda" / "__ptx" / "instructions" / "generated"
        ptx.mkdir(parents=True)
        (ptx / "cp_async_bulk.h").write_text(
            "// cp.async.bulk.shared::cluster.global; // PTX ISA 80, SM_90\n"
        )
        (root / "include" / "cuda_runtime.h").write_text("// runtime\n")
        (root / "include" / "cuda_runtime_api.h").write_text("// cudaMemcpyAsync\n")
    return root


def test_the_toolkit_is_found_through_the_nvcc_on_path(tmp_path, monkeypatch):
    root = _toolkit(tmp_path / "cuda-99.9", headers=True)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvcc").symlink_to(root / "bin" / "nvcc")  # as /usr/bin/nvcc often is
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert cuda_toolkit() == root.resolve()
    found = builtin_sources()
    assert found["cuda.ptx"] == [root.resolve() / CUDA_TOOLKIT["cuda.ptx"][0][0]]
    assert found["cuda.headers"] == [root.resolve() / "include" / "cuda_runtime_api.h"]  # only what exists


def test_an_nvcc_without_headers_is_not_taken_for_a_toolkit(tmp_path, monkeypatch):
    root = _toolkit(tmp_path / "bare", headers=False)
    monkeypatch.setenv("PATH", str(root / "bin"))
    assert cuda_toolkit() != root.resolve()  # /usr/local/cuda where there is one, else None


@pytest.mark.parametrize(
    ("source", "query", "file"),
    [
        ("cutlass.cute", "make_tiled_copy", "__init__.py"),
        ("tilelang.language", "T.gemm", "gemm_op.py"),
        ("tilelang.src.tl_templates.cuda", "wgmma mma_async", "wgmma.h"),
        ("cuda.ptx", "cp.async.bulk.tensor", "cp_async_bulk_tensor.h"),
        ("cuda.headers", "__hmul2", "cuda_fp16.h"),
    ],
)
def test_each_builtin_answers_what_an_agent_asks_of_it(tmp_path, source, query, file):
    found = builtin_sources()
    if source not in found:
        pytest.skip(f"{source}: not on this machine")
    index = ContextIndex(tmp_path)
    try:
        index.add_roots(source, found[source])
        assert file in {Path(s.path).name for s in index.search(query, 3)}
    finally:
        index.close()


def test_every_installed_dsl_package_is_a_builtin():
    found = builtin_sources()
    for package, source in (
        ("triton", "triton.language"),
        ("cutlass", "cutlass.cute"),
        ("tilelang", "tilelang.language"),
    ):
        if importlib.util.find_spec(package) is not None:
            assert source in found, source
