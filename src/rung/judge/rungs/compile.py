"""compile: build every kernel the solution launches for the target GPU, without running it.

The kernels are specialised for every benchmark case (the shapes that get timed: a wider row
may well compile to other registers and spills), each called with meta tensors: no data, and
pointers that look 16-byte aligned as on a GPU, so the build matches what the GPU will run. A
kernel specialised alike for two cases is built once. Where the problem or the solution cannot
work on meta tensors, the first test case on the judge's device is used instead. Each build's
`case` is the case whose call launched it (a recursive solution launches smaller shapes too).

Build time is a figure of this rung: `build_s` per kernel (the compiler's, or the copy out of the
build cache where the same build was made before: `cached`), their total, and on a GPU
`import_build_s`, what building the solution's extensions took when it was imported to run
(torch's load_inline compiling CUDA C++), so that time is never hidden in another rung's.

The build's files are copied out of the scratch folder the moment the request returns
(`build_copy`: each checked against the hash the build reported, the SASS disassembled here from
the copied CUBIN): the artifacts this rung names are those copies, never the solution's files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rung import backends, knobs
from rung.backends import build_cache
from rung.judge.build_copy import keep_build
from rung.judge.rungs.outcome import Failed, Skipped
from rung.spec import RungResult, Status

if TYPE_CHECKING:
    from rung.judge.session import Session


def compile_rung(session: Session, params: dict[str, Any]) -> RungResult:
    backend = backends.detect(session.source_file.read_text(errors="replace"))
    if backend.compile_solution is None:  # known from its imports alone: no process to start
        raise Skipped(f"{backend.BACKEND.value} solution: nothing to build ahead of time")
    arch = str(knobs.get("RUNG_ARCH"))
    out_dir = session.run_dir / "solution" / "compile"
    problem = session.problem
    answer: dict[str, Any] = {}
    if problem.meta_inputs:
        try:
            answer = _build(session, problem.benchmarks, "meta", arch, out_dir)
        except Exception:
            answer = {}  # the problem cannot make meta tensors
        if "error" in answer:
            answer = {}  # the solution cannot work on meta tensors
    if not answer.get("kernels") and not {"compile_error", "nothing", "cannot"} & set(answer):
        answer = _build(session, problem.tests[:1], session.device, arch, out_dir)
    if "nothing" in answer:
        raise Skipped(str(answer["nothing"]))
    if "cannot" in answer:
        raise Skipped(str(answer["cannot"]))
    if "compile_error" in answer:
        raise Failed(f"compile error for {arch}:\n{answer['compile_error']}")
    if "error" in answer:
        return RungResult("compile", Status.ERROR, str(answer["error"]))
    kernels = answer.get("kernels") or []
    session.built_kernels = kernels  # what guard recognises the solution's own kernels by
    if not kernels:
        # Not a failure of the solution's: a kernel can run without passing through the launcher
        # this rung intercepts (torch.compile's inductor builds and launches a user's Triton
        # kernel itself, as GPU MODE's vectorsum example does). Whether one ran is the guard's
        # kernel_launched to judge, from what the GPU (or the interpreter) saw.
        raise Skipped(
            f"no {backend.BACKEND.value} kernel reached its launcher when {problem.entry_name} ran on "
            f"{problem.tests[0]}: nothing built ahead of time (guard's kernel_launched judges whether one ran)"
        )
    kept = keep_build(session.run_dir, answer)
    metrics = {
        "arch": arch,
        "kernels": kernels,
        "max_registers": max(k["registers"] for k in kernels),
        "max_shared_bytes": max(k["shared_bytes"] for k in kernels),
        "spill_instructions": sum(k["spill_instructions"] for k in kernels),
        **build_times(answer, kernels),
        "artifact_sha256": kept.copied.sha256,
    }
    summary = "; ".join(
        f"{k['name']} (from {k['case']}): {k['registers']} regs, {k['shared_bytes']} B smem, "
        f"{k['spill_instructions']} spill ops"
        for k in kernels
    )
    said = f"{len(kernels)} kernel build(s) for {arch}{_built_in(metrics)}: {summary}"
    notes = "".join(f"\n{note}" for note in kept.notes)
    if kept.copied.refused:  # the build's own files were tampered with, or named outside its folder
        return RungResult(
            "compile", Status.FAILED, kept.copied.refusals("compile") + notes, metrics, kept.paths
        )
    return RungResult("compile", Status.OK, said + notes, metrics, kept.paths)


def build_times(answer: dict[str, Any], kernels: list[dict[str, Any]]) -> dict[str, Any]:
    """The build figures: total seconds, whether every build came from the cache, and the
    import's own builds where there were any."""
    figures: dict[str, Any] = {
        "build_s": float(answer.get("build_s") or 0),
        "cached": all(bool(k.get("cached")) for k in kernels),
    }
    if answer.get("import_build_s"):
        figures["import_build_s"] = float(answer["import_build_s"])
    return figures


def _built_in(metrics: dict[str, Any]) -> str:
    if not metrics["build_s"] and "import_build_s" not in metrics:
        return ""
    words = f", built in {metrics['build_s']:.2f} s{' (cached)' if metrics['cached'] else ''}"
    if "import_build_s" in metrics:
        words += f", {metrics['import_build_s']:.2f} s more by torch at import"
    return words


def _build(
    session: Session, cases: list[dict[str, Any]], device: str, arch: str, out_dir: Any
) -> dict[str, Any]:
    """Ask the builder to call the solution once per case, every launch built instead of run."""
    builder = session.builder
    builder.launch()  # it starts (imports, confines itself) while the judge draws the inputs
    placed = [builder.place(session.inputs(case, session.seed, device=device)) for case in cases]
    try:
        return builder.request(
            "compile",
            {
                "cases": [{"case": c, "inputs": p.tree} for c, p in zip(cases, placed, strict=True)],
                "arch": arch,
                "out_dir": str(out_dir),
                "cache_dir": str(build_cache.for_run(session.run_dir)),
            },
            session.timeout_s,
        )
    finally:
        for p in placed:
            builder.free(p.ids, p.local)
