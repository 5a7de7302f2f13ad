"""The solution process's answers, by request: shared buffers, load, call, perturb, bench, compile.

Each answer is JSON the judge reads as untrusted figures. The solution's exceptions become an
`error` in the answer (with the file and line in the solution), never a crash of the process;
what the solution did to the process (functions replaced, threads left) comes with every answer.
"""

from __future__ import annotations

from typing import Any

from rung import backends
from rung.common.messages import FormatSide
from rung.common.shm import TensorSpec

# Imported with this module, before any solution is: rung's timing and checked-call draw capture
# the functions they use then (`rung.common.timing`, `rung.common.checked_calls`).
from rung.solution.bench import bench
from rung.solution.harness import Harness, ReferenceImport


def handle(harness: Harness, warmup: Any, op: str, params: dict[str, Any]) -> dict[str, Any]:
    answer = _answer(harness, warmup, op, params)
    answer["harm"] = harness.harm().to_dict()
    return answer


def _answer(harness: Harness, warmup: Any, op: str, params: dict[str, Any]) -> dict[str, Any]:
    if op == "alloc":
        made = [harness.exporter.allocate(TensorSpec.from_dict(s)) for s in params["specs"]]
        return {"buffers": [[key, handle] for key, handle in made]}
    if op == "configure":
        harness.configure(FormatSide.from_dict(params))
        return {}
    if op == "load":
        return load(harness)
    if op == "call":
        kernel_names = bool(params.get("kernel_names"))
        if kernel_names and warmup is not None:
            warmup.wait()  # one profiler at a time: the warm-up's must be over
        perturb, harness.perturb_next = harness.perturb_next, None
        report = harness.call(
            params["inputs"],
            list(params.get("slots", [])),
            bool(params.get("suppress")),
            kernel_names,
            perturb,
        )
        return report.to_dict()
    if op == "perturb":  # the next call's Triton stores perturbed (the guard's test of their work)
        harness.perturb_next = int(params["seed"])
        return {}
    if op == "bench":
        return bench(harness, warmup, params)
    if op == "compile":
        from rung.solution.build import build

        return build(harness, params)
    if op == "before_import":  # the judge counts this process's threads next: the profiler's
        if warmup is not None:  # warm-up (CUPTI's threads) over by then, so they are counted
            warmup.wait()
        return {}
    if op in ("harm", "release"):  # release: only the frees the request carries (main.py)
        return {}
    raise ValueError(f"unknown request {op!r}")


def load(harness: Harness) -> dict[str, Any]:
    """Import the solution and find its entry point: its backend, or what went wrong."""
    source = harness.source.read_text(errors="replace")
    try:
        compile(source, str(harness.source), "exec")
    except SyntaxError as e:
        return {"failed": f"SyntaxError at {harness.source.name}:{e.lineno}: {e.msg}"}
    backend = backends.detect(source).BACKEND.value  # until the import says what it used
    try:
        module = harness.module
    except ReferenceImport as e:
        return {"failed": f"uses the problem's reference: {e}", "backend": backend}
    except NameError as e:
        if getattr(e, "name", None) in harness.reference_names:
            return {
                "failed": f"uses the problem's reference: {e.name} is the judge's alone, not in a solution's scope",
                "backend": backend,
            }
        return {"error": harness.where(e), "backend": backend}
    except ModuleNotFoundError as e:
        missing = not_installed(source, e)
        if missing:
            return {"failed": missing, "backend": backend}
        return {"error": harness.where(e), "backend": backend}
    except BaseException as e:
        return {"error": harness.where(e), "backend": backend}
    fn = getattr(module, harness.entry_name, None)
    if fn is None:
        return {"failed": f"{harness.source.name} defines no {harness.entry_name}", "backend": backend}
    if not callable(fn):
        return {
            "failed": f"{harness.entry_name} in {harness.source.name} is a {type(fn).__name__}, not callable",
            "backend": backend,
        }
    used = backends.used(harness.imported)
    return {"backend": used[0], "backends": used, "device": harness.device}


def not_installed(source: str, error: ModuleNotFoundError) -> str:
    """What to install, where the missing module is the package of one of the solution's backends
    that rung installs as an extra; '' for any other missing module (the solution's own error)."""
    top = (error.name or "").split(".")[0]
    for backend in backends.detect_all(source):
        if backend.EXTRA and top in {name.split(".")[0] for name in backend.IMPORTS}:
            return (
                f"{backend.BACKEND.value} solution, but {top} is not installed here: "
                f"pip install 'rung[{backend.EXTRA}]'"
            )
    return ""
