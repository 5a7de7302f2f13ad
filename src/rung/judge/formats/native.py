"""rung's own problem format: `problem.py` with TESTS, BENCHMARKS, generate_input and reference.

TESTS / BENCHMARKS       lists of keyword dicts (shapes and options), as data (literals and
                         arithmetic), or in cases.yml beside problem.py (rung.problem_data)
generate_input(seed, device, **case) -> tuple    the solution's positional inputs
reference(*inputs)       slow and right; run on float64 copies unless REFERENCE_UPCAST = False
TOLERANCE                optional {"atol", "rtol", "min_psnr_db", "min_cosine", "max_norm_rel_err"} override
cost(**case)             optional {"flops": int, "bytes": int}, minimum work for the roofline,
                         and optionally "math": the ceiling its FLOPs run against (roofline.py)
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from rung.common.loader import import_file
from rung.errors import ProblemError
from rung.judge.formats.base import CaseSize, LoadedProblem
from rung.problem_data import native_cases, problem_name


class NativeProblem(LoadedProblem):
    def __init__(self, folder: Path) -> None:
        path, problem = folder / "problem.py", problem_name(folder)
        try:
            module = import_file(path, f"rung_problem_{problem}")
        except ProblemError:
            raise
        except BaseException as e:
            raise ProblemError(f"{path}: import failed: {type(e).__name__}: {e}") from None
        for name in ("generate_input", "reference"):
            if not callable(getattr(module, name, None)):
                raise ProblemError(f"{path}: defines no function {name}()")
        super().__init__(
            name=problem,
            path=str(folder.resolve()),
            doc=inspect.cleandoc(module.__doc__ or "").strip(),
            **native_cases(folder),  # as data, so `rung problem` reads the same cases without a judge
            has_cost=getattr(module, "cost", None) is not None,  # as `cost` below asks
            upcast_reference=bool(getattr(module, "REFERENCE_UPCAST", True)),
        )
        self.module = module

    def inputs(self, case: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        out = self.module.generate_input(seed=seed, device=device, **case)
        return out if isinstance(out, tuple) else (out,)

    def reference(self, inputs: tuple[Any, ...]) -> Any:
        return self.module.reference(*inputs)

    def cost(self, case: dict[str, Any]) -> dict[str, Any] | None:
        fn = getattr(self.module, "cost", None)
        if fn is None:
            return None
        c = fn(**case)
        out: dict[str, Any] = {"flops": int(c.get("flops", 0)), "bytes": int(c.get("bytes", 0))}
        if "math" in c:
            out["math"] = str(c["math"])
        return out

    def case_size(self, case: dict[str, Any]) -> CaseSize:
        """The cost model's bytes where it gives them (what a case must move: inputs and output),
        else the inputs and output sized on the meta device."""
        moved = (self.cost(case) or {}).get("bytes")
        return CaseSize(int(moved), "the cost model's bytes") if moved else super().case_size(case)
