"""SASS with the solution's source: a real Triton build for sm_90a on this CPU (its line info names
the run's copy of the solution, or another run's when the compile cache had it), the solution's
own lines shown with their text; a CUDA source mapped back to the .py it is a string of; paths
that line info names are never opened; hot lines marked from source counters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rung import knobs
from rung.derived.sass_source import Sources, Where, hottest, parse, render
from rung.spec import Status
from tests.conftest import PROBLEMS, rung_of

VECTOR_ADD = PROBLEMS / "vector_add"


@pytest.fixture(scope="module")
def dumped(tmp_path_factory: pytest.TempPathFactory):
    """vector_add's Triton solution compiled for the target GPU and dumped (the rungs that run
    the kernel left out: this is about the build)."""
    from tests.conftest import Climber

    climb = Climber(tmp_path_factory.mktemp("sass_source"))
    with knobs.scoped(RUNG_SKIP="run,guard,correct,scale"):
        run = climb(VECTOR_ADD, VECTOR_ADD / "solutions" / "correct" / "tuned.py")
    return run


def test_triton_sass_comes_under_the_solutions_own_lines(dumped):
    dump = rung_of(dumped, "dump")
    assert dump.status == Status.OK, dump.message
    (text_file,) = [Path(a) for a in dump.artifacts if a.endswith(".sass_src.txt")]
    assert text_file.parent.parent.name == str(dumped.id)  # <run>/dump/: not the solution's scratch
    text = text_file.read_text()
    source = (VECTOR_ADD / "solutions" / "correct" / "tuned.py").read_text().splitlines()
    load = next(i + 1 for i, line in enumerate(source) if "tl.load(" in line)
    assert f"tuned.py:{load}  {source[load - 1].strip()}" in text
    blocks = re.split(r"\n(?=\S)", text.split("\n\n", 1)[1])  # a source line, then its SASS
    with_loads = [b.splitlines()[0] for b in blocks if "LDG.E.128" in b]
    assert with_loads and all("tl.load(" in header for header in with_loads)  # where loads were asked
    facts = dump.metrics["kernels"]
    (build,) = facts.values()
    assert build["source_lines"] > 3
    assert all(t["line"].startswith("tuned.py:") for t in build["top_lines"])
    assert "# hottest (Nsight Compute source counters): not profiled" in text


def _run_folder(tmp_path: Path, solution: str, cu: str | None = None) -> tuple[Path, Path | None]:
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "v2.py").write_text(solution)
    (tmp_path / "lib").mkdir()
    kept = None
    if cu is not None:
        kept = tmp_path / "artifacts" / "compile" / "ext.cu"  # the judge's copy
        kept.parent.mkdir(parents=True)
        kept.write_text(cu)
    return tmp_path, kept


LINED = """\
//--------------------- .text.k                   --------------------------
k:
\t//## File "{cu}", line 4
        /*0000*/                   LDC R1, c[0x0][0x28] ;              /* 0x00000a00ff017b82 */
                                                                       /* 0x000fe20000000800 */
\t//## File "/usr/local/cuda/include/cuda_fp16.hpp", line 708 inlined at "{cu}", line 5
        /*0010*/                   HADD2.F32 R0, -RZ, R2.H0_H0 ;       /* 0x0000000000007919 */
\t//## File "{cu}", line 5
        /*0020*/                   FFMA R7, R0, R0, 1 ;
        /*0030*/                   STG.E desc[UR4][R4.64], R7 ;
\t//## File "/etc/hostname", line 1
        /*0040*/                   EXIT ;
"""


def test_a_cuda_source_maps_back_to_the_python_it_is_a_string_of(tmp_path):
    kernel_src = "__global__ void k(float* b) {\n    float v = 1.0f;\n    b[0] = v * v + 1.0f;\n}\n"
    solution = f'import torch\n\nSRC = r"""\n{kernel_src}"""\n'
    cu = "#include <torch/types.h>\n#include <cuda.h>\n" + kernel_src  # as load_inline writes it
    run_dir, kept = _run_folder(tmp_path, solution, cu)
    (kernel,) = parse(LINED.format(cu="/elsewhere/runs/9/solution/compile/ext.cu"), Sources(run_dir, kept))
    where = [w for _, _, w in kernel.instructions]
    assert where[0] == Where("v2.py:5", "float v = 1.0f;")
    # inlined from a CUDA header: the solution's calling line, not the header's
    assert where[1] == where[2] == Where("v2.py:6", "b[0] = v * v + 1.0f;")
    assert where[4] == Where("hostname:1")  # named, never opened


def test_a_cu_line_not_from_the_solution_keeps_the_kept_cu_line(tmp_path):
    run_dir, kept = _run_folder(
        tmp_path, "import torch\n", "#include <a.h>\n#include <b.h>\nint x;\nint y;\nint z;\n"
    )
    (kernel,) = parse(LINED.format(cu="ext.cu"), Sources(run_dir, kept))
    assert kernel.instructions[0][2] == Where("ext.cu:4", "int y;")


def test_the_hottest_lines_are_marked_from_source_counters(tmp_path):
    """Marking, on a fixture of per-address samples: no Nsight Compute runs on this CPU."""
    run_dir, kept = _run_folder(tmp_path, "x = 1\n", "a\nb\nc\nd\ne\n")
    (kernel,) = parse(LINED.format(cu="ext.cu"), Sources(run_dir, kept))
    samples = {0x00: 10.0, 0x10: 30.0, 0x20: 50.0, 0x30: 10.0}
    assert hottest(kernel, samples) == {Where("ext.cu:5", "e"): 0.9, Where("ext.cu:4", "d"): 0.1}
    text = render(kernel, samples)
    assert "# hottest (Nsight Compute source counters): ext.cu:5 90%, ext.cu:4 10%" in text
    assert ">>  90% ext.cu:5  e\n        /*0010*/  HADD2.F32 R0, -RZ, R2.H0_H0 ;  [30]" in text
    assert "hostname:1\n        /*0040*/  EXIT ;\n" in text  # no samples: not marked
    assert hottest(kernel, {}) == {}
