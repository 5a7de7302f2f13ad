"""compile, the solution process's part: build every kernel the solution launches for a target
arch, calling it on the inputs the judge placed (meta tensors where the problem allows them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rung import backends
from rung.solution.harness import Harness, entry_point

FIGURES = (
    "name",
    "registers",
    "shared_bytes",
    "local_bytes",
    "spill_instructions",
    "num_warps",
    "num_stages",
)


def build(harness: Harness, params: dict[str, Any]) -> dict[str, Any]:
    backend = backends.detect(harness.source.read_text(errors="replace"))
    if backend.compile_solution is None:
        return {"nothing": f"{backend.BACKEND.value} solution: nothing to build ahead of time"}

    def call_for(tree: Any) -> Any:
        return lambda module: entry_point(module, harness.entry_name, harness.format, harness.init_inputs)(
            *harness.inputs(tree)
        )

    calls = [(c["case"], call_for(c["inputs"])) for c in params["cases"]]
    try:
        built = backend.compile_solution(harness.source, calls, str(params["arch"]), Path(params["out_dir"]))
    except backend.CompileFailed as e:
        return {"compile_error": str(e)}
    except Exception as e:
        return {"error": harness.where(e)}
    return {
        "kernels": [
            {**{k: getattr(b, k) for k in FIGURES}, "constexprs": b.constexprs, "case": b.case} for b in built
        ],
        "artifacts": [a for b in built for a in b.artifacts],
    }
