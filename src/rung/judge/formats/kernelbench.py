"""KernelBench problem files: `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()`.

One Python file is the problem; its module-level size constants are its one case (read as data
by rung.problem_data, as `rung problem` reads them), used for the tests and the benchmark alike
(the case lists them, so every message shows the sizes). A solution defines `class ModelNew` with Model's constructor.
Both models are built from get_init_inputs() after the same `torch.manual_seed`, so their
weights match, and moved to the device; the reference is Model's forward (in float64 on a
float64 copy of the model for the precise comparison). Inputs come from get_inputs() after
`torch.manual_seed(seed)`, so every trial draws fresh ones, made on the device that uses them
(`inputs`: not KernelBench's values, which it draws on the CPU, but from the same distributions).
No cost model: the roofline's is
estimated from the reference (estimate.py).

The verdict on values is KernelBench's own, as its eval (`src/kernelbench/eval.py`) gives it:
the output's shape equal to Model's, then `torch.allclose` against Model's output in its own
precision with atol = rtol per precision (fp32 1e-4; fp16 and bf16 1e-2), on 5 fresh inputs per
case (its scripts' num_correct_trials); allclose's verdict is taken a chunk of the output at a
time (`compare.allclose`), so a 6 GiB output needs no temporaries of its size. rung's stricter
rules (its dtype rule, its tolerance and norm-wise error against a float64 reference) are
warnings beside it, failures under RUNG_STRICT=1.

On the meta device get_inputs() runs under `with torch.device("meta")`, so the tensors it makes
with torch.rand and the like have shapes and no data (KernelBench's ReLU is 6 GiB of input), and
Model is built there too; that is how a case is sized before anything is allocated, and what the
compile rung specialises its kernels on.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from pathlib import Path
from typing import Any

import torch

from rung.common.loader import import_file
from rung.common.messages import FormatSide
from rung.common.trees import clone_tree, tensor_list
from rung.errors import ProblemError
from rung.judge.compare import allclose
from rung.judge.formats.base import LoadedProblem
from rung.problem_data import KERNELBENCH_CHECK, KERNELBENCH_TRIALS, kernelbench_sizes, problem_name

WEIGHT_SEED = 42
OWN_TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 1e-2}


class KernelBenchProblem(LoadedProblem):
    def __init__(self, path: Path) -> None:
        try:
            module = import_file(path, f"rung_kernelbench_{problem_name(path)}")
        except BaseException as e:
            raise ProblemError(f"{path}: import failed: {type(e).__name__}: {e}") from None
        for name in ("Model", "get_inputs", "get_init_inputs"):
            if not callable(getattr(module, name, None)):
                raise ProblemError(f"{path}: defines no {name}")
        super().__init__(
            name=problem_name(path),
            path=str(path.resolve()),
            doc=inspect.cleandoc(module.__doc__ or module.Model.__doc__ or "").strip(),
            tests=[kernelbench_sizes(path)],
            benchmarks=[kernelbench_sizes(path)],
            entry_name="ModelNew",
            owns_verdict=True,
            trials=KERNELBENCH_TRIALS,
            own_check=KERNELBENCH_CHECK,
        )
        self.module = module
        self._models: dict[tuple[str, bool], Any] = {}

    def _build(self, cls: Any, device: str) -> Any:
        torch.manual_seed(WEIGHT_SEED)
        with _on_meta(device):
            model = cls(*self.module.get_init_inputs())
        return model.to(device) if hasattr(model, "to") else model

    def inputs(self, case: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        """get_inputs() after `torch.manual_seed(seed)`, drawn where they will be used: its
        torch.rand and the like make their tensors on `device` (on the CPU, KernelBench's 6 GiB
        Sigmoid input took seconds to draw, and the guard draws several). A get_inputs that needs
        host tensors (numpy, Python lists) is drawn on the CPU again, with the same seed, and
        moved; on the meta device there is no such fallback (shapes only)."""
        torch.manual_seed(seed)
        try:
            with torch.device(device):
                drawn = self.module.get_inputs()
        except Exception:
            if device == "meta":
                raise
            torch.manual_seed(seed)
            drawn = self.module.get_inputs()
        return tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in drawn)

    def reference(self, inputs: tuple[Any, ...]) -> Any:
        tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
        device = str(tensors[0].device) if tensors else "cpu"
        precise = any(t.dtype == torch.float64 for t in tensors)
        key = (device, precise)
        if key not in self._models:
            model = self._build(self.module.Model, device)
            self._models[key] = copy.deepcopy(model).double() if precise else model
        with torch.no_grad():
            return self._models[key](*inputs)

    def check(self, inputs: tuple[Any, ...], output: Any, reference: Any = None) -> tuple[bool, str] | None:
        """KernelBench's own verdict: same shape, then allclose at its tolerance for the
        precision, against Model run as KernelBench runs it (not upcast): `reference` where the
        judge has that run already (a second one of a 6 GiB output does not fit beside it on an
        80 GB GPU)."""
        if reference is None:
            reference = self.reference(clone_tree(inputs))
        want = tensor_list(reference) or []
        got = tensor_list(output) or []
        for which, (g, w) in enumerate(zip(got, want, strict=False)):
            at = "" if len(want) == 1 else f"output {which}: "
            if g.shape != w.shape:
                return False, f"{at}output shape mismatch: expected {tuple(w.shape)}, got {tuple(g.shape)}"
            if g.dtype != w.dtype:
                return (
                    False,
                    f"{at}{g.dtype} where Model returns {w.dtype}: KernelBench's allclose refuses the pair",
                )
            tol = OWN_TOLERANCE.get(w.dtype, OWN_TOLERANCE[torch.float32])
            close, largest, mean = allclose(g, w, atol=tol, rtol=tol)
            if not close:
                return False, (
                    f"{at}output mismatch outside KernelBench's atol=rtol={tol:g} "
                    f"(max difference {largest:.6g}, mean {mean:.6g})"
                )
        return True, ""

    def weight_bytes(self) -> int:
        """Model's parameters and buffers, in the precision KernelBench runs it."""
        model = next((m for (_, precise), m in self._models.items() if not precise), None)
        if model is None:
            model = self._build(self.module.Model, "meta")  # sizes without allocating
        if not hasattr(model, "parameters"):
            return 0
        state = [*model.parameters(), *model.buffers()]
        return sum(t.numel() * t.element_size() for t in state)

    def solution_side(self, lib_dir: Path) -> FormatSide:
        init = list(self.module.get_init_inputs())
        if not all(_plain(v) for v in init):
            raise ProblemError(
                f"{self.path}: get_init_inputs() must return plain values (ints, floats, strings, "
                "and lists or tuples of them): they cross to the solution process as JSON"
            )
        return FormatSide(
            entry=self.entry_name,
            format="kernelbench",
            init_inputs=init,
            reference_names=["Model", "get_inputs", "get_init_inputs"],
            forbidden_modules=[self.name, f"rung_kernelbench_{self.name}"],
        )


def _on_meta(device: str) -> contextlib.AbstractContextManager[Any]:
    """Where `device` is meta, tensors made inside land there: shapes, no data."""
    return torch.device("meta") if device == "meta" else contextlib.nullcontext()


def _plain(v: Any) -> bool:
    """A value that crosses as JSON and comes back as what a constructor expects (a tuple as a
    list: LayerNorm's normalized_shape takes either)."""
    if isinstance(v, (list, tuple)):
        return all(_plain(x) for x in v)
    return v is None or isinstance(v, (bool, int, float, str))
