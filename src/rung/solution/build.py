"""compile, the solution process's part: build every kernel the solution launches for a target
arch, calling it on the inputs the judge placed (meta tensors where the problem allows them).

Builds go to the build cache the judge names (`cache_dir`). On a GPU, where this process also
imported the solution, what torch's own extension builds took at that import is reported beside
(`import_build_s`): a CUDA C++ solution is built twice there, once by nvcc for the figures and
once by torch to run, and both are compile time, not run time.

Each artifact's SHA-256 is reported as built: the judge copies the files out of the scratch folder
when this request returns and refuses any that changed since."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from rung import backends
from rung.backends import build_cache, fake_cuda
from rung.backends.cuda_nvcc import NoToolkit
from rung.solution.harness import Harness, entry_point

FIGURES = (
    "name",
    "registers",
    "shared_bytes",
    "local_bytes",
    "spill_instructions",
    "max_threads",
    "num_warps",
    "num_stages",
    "build_s",
    "cached",
)


def build(harness: Harness, params: dict[str, Any]) -> dict[str, Any]:
    backend = backends.detect(harness.source.read_text(errors="replace"))
    if backend.compile_solution is None:
        return {"nothing": f"{backend.BACKEND.value} solution: nothing to build ahead of time"}
    if params.get("cache_dir"):
        build_cache.use(Path(params["cache_dir"]))

    def call_for(tree: Any) -> Any:
        return lambda module: entry_point(module, harness.entry_name, harness.format, harness.init_inputs)(
            *fake_cuda.placed(harness.inputs(tree))
        )

    calls = [(c["case"], call_for(c["inputs"])) for c in params["cases"]]
    try:
        built = backend.compile_solution(harness.source, calls, str(params["arch"]), Path(params["out_dir"]))
    except backend.CompileFailed as e:
        return {"compile_error": str(e)}
    except NoToolkit as e:
        return {"cannot": str(e)}
    except Exception as e:
        return {"error": harness.where(e)}
    artifacts = list(dict.fromkeys(a for b in built for a in b.artifacts))
    return {
        "kernels": [
            {**{k: getattr(b, k) for k in FIGURES}, "constexprs": b.constexprs, "case": b.case} for b in built
        ],
        "artifacts": artifacts,
        "artifact_sha256": {a: _sha256(a) for a in artifacts},
        "build_s": _total_build_s(built),
        "import_build_s": _import_build_s(harness),
    }


def _sha256(path: str) -> str:
    """The file's hash as built: the judge refuses a copy that no longer matches it."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def _total_build_s(built: list[Any]) -> float:
    """Seconds of building: kernels built together (one CUBIN holds them) counted once."""
    per_build = {next((a for a in b.artifacts if a.endswith(".cubin")), b.name): b.build_s for b in built}
    return round(sum(per_build.values()), 4)


def _import_build_s(harness: Harness) -> float:
    """Seconds torch's extension builds took when this process imported the solution (on a GPU,
    where it is imported to run); 0 where it was not imported here."""
    if harness.device != "cuda":
        return 0.0
    try:
        harness.module  # noqa: B018 - the import (and its builds) is what is measured
    except Exception:
        return 0.0  # load reports why it does not import
    return round(harness.import_build_s, 4)
