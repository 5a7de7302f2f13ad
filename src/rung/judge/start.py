"""The start message of a solution process: what it may read and write, and its environment.

Torch-free, so the judge can start its solution process before importing torch itself, and the
two start-ups overlap. What the format tells the solution (its entry point, the reference's
names it may not use, the helpers it shares) comes later, with `configure`: the problem must be
loaded to know it, and the solution process is already starting by then.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rung import backends, knobs
from rung.backends import build_cache, cuda_nvcc
from rung.common import confine
from rung.common.messages import JudgeHello, SolutionStart


def write_source(hello: JudgeHello) -> Path:
    """The solution's bytes, as the controller read, hashed and stored them, in a file the
    solution process may read but not change."""
    folder = Path(hello.run_dir) / "source"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (hello.solution_name or "solution.py")
    path.write_text(str(hello.source))
    return path


def solution_start(hello: JudgeHello, source: Path, interpret: bool) -> tuple[SolutionStart, dict[str, str]]:
    """The start message, and the environment (from an allow-list) to start the process with."""
    run_dir = Path(hello.run_dir)
    scratch = run_dir / "solution"
    lib = run_dir / "lib"  # filled with the format's shared helpers before `configure`
    env = _common_environment()
    caches = _caches()
    builds = build_cache.for_run(run_dir)
    env.update(
        TMPDIR=str(scratch / "tmp"),
        HOME=str(scratch / "home"),
        TRITON_CACHE_DIR=caches[0],
        CUDA_CACHE_PATH=caches[1],
        # Each check's own: a build torch makes here under an extension's name is never another
        # check's (load_inline's builds are kept in the build cache by key: torch_builds). Its
        # build runs ninja, which is installed beside this Python.
        TORCH_EXTENSIONS_DIR=str(scratch / "torch_extensions"),
        # TileLang builds each kernel on its first call (nvcc) and keeps it here for the next check.
        TILELANG_CACHE_DIR=str(builds / "tilelang_cache"),
    )
    for folder in (lib, scratch / "tmp", scratch / "home"):
        folder.mkdir(parents=True, exist_ok=True)
    start = SolutionStart(
        source=str(source),
        scratch=str(scratch),
        lib_dirs=[str(lib)],
        caches=[*caches, str(builds), str(scratch / "tmp"), str(scratch / "home")],
        tool_dirs=_toolkits(source),
        cpu_memory_mb=hello.cpu_memory_mb,
        interpret=interpret,
        confine=hello.confine,
        warm_profiler=interpret,  # on a GPU only
    )
    return start, env


def _common_environment() -> dict[str, str]:
    """What every solution process's environment holds, whatever its run: the allow-list's,
    and rung's own settings."""
    env = confine.allowed_environment(os.environ)
    # Whether Triton interprets is rung's choice (`configure_process`: on a machine without CUDA,
    # never in a process that builds): with a TRITON_INTERPRET=1 from the user's shell, the
    # process that builds would hand Triton's compiler interpreted functions, and every compile
    # would fail.
    env.pop("TRITON_INTERPRET", None)
    env.update(
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
        PYTHONUNBUFFERED="1",
        # torch.compile builds its kernels in this process, one after another: with a pool of
        # compile workers (one per core by default), inductor starts a timer thread when a
        # compile begins and ends it a minute after the last, so a size compiled while bench
        # times the solution shows a thread bench cannot tell from one the solution left running.
        TORCHINDUCTOR_COMPILE_THREADS="1",
        PATH=os.pathsep.join(p for p in (str(Path(sys.executable).parent), env.get("PATH", "")) if p),
    )
    return env


def server_environment() -> dict[str, str]:
    """The fork server's environment: a solution process's, less what is each run's own. Its
    HOME and TMPDIR are a folder no solution process may read or write (a library that kept a
    path from them at import hands its children one they cannot use, never a shared one)."""
    env = _common_environment()
    root = knobs.cache_dir() / "solution" / "fork-server"
    root.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(root), TMPDIR=str(root))
    return env


def _caches() -> list[str]:
    """Compiler caches the solution processes may write, theirs alone: Triton's and CUDA's JIT
    cache. Never the judge's (~/.triton/cache, ~/.nv): its torch.compile baseline loads the
    launchers Triton keeps there, native code, and no solution may plant one."""
    root = knobs.cache_dir() / "solution"
    return [str(root / "triton"), str(root / "nv")]


def _toolkits(source: Path) -> list[str]:
    """Folders of the compilers a CUDA C++ or TileLang solution builds with (nvcc's, wherever
    the toolkit is installed), for the solution process to read and run."""
    try:
        text = source.read_text(errors="replace")
        found = {b.BACKEND for b in backends.detect_all(text)}
    except (OSError, SyntaxError):
        return []
    uses_nvcc = found & {backends.Backend.CUDA, backends.Backend.TILELANG}
    return cuda_nvcc.toolkit_dirs() if uses_nvcc else []
