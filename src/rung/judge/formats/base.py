"""What every problem format provides to the judge: cases, inputs, a reference, a policy, sizes."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from rung.common.messages import FormatSide
from rung.common.trees import leaves
from rung.spec import Problem


@dataclass(frozen=True)
class CaseSize:
    """A case's inputs plus output, in bytes, found without building the case: how it was
    found, or why it cannot be (then `total_bytes` is None), and whether the output is a guess."""

    total_bytes: int | None
    how: str
    estimated: bool = False


@dataclass
class LoadedProblem(Problem):
    """A problem whose code is imported: the data model's Problem (what the controller is told,
    `describe`) and the calls the judge makes to build and judge cases."""

    upcast_reference: bool = True
    entry_name: str = "custom_kernel"  # what a solution must define
    meta_inputs: bool = True  # inputs(case, seed, "meta") works: shapes without data
    output_leaves: set[int] = field(
        default_factory=set
    )  # input tensors that are outputs (destination passing)
    owns_verdict: bool = False  # its own check decides on values; rung's stricter rules warn
    trials: int | None = None  # fresh seeds per test case its own harness uses (else RUNG_TRIALS)

    def entry(self, module: types.ModuleType) -> Callable[..., Any]:
        """The callable each call of the ladder invokes with a case's inputs."""
        return getattr(module, self.entry_name)

    def listed_seed(self, case: dict[str, Any]) -> int | None:
        """The seed the problem itself lists for `case`, checked besides the fresh ones."""
        return None

    def check(self, inputs: tuple[Any, ...], output: Any, reference: Any = None) -> tuple[bool, str] | None:
        """The problem's own verdict on an output, where it has one; None lets rung's comparison decide.
        `reference`, where the caller has it, is the reference's output on these very inputs, run
        as the problem runs it (not upcast): a check that would run the reference again may take it."""
        return None

    def inputs(self, case: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        """The solution's positional arguments for `case`, drawn from `seed` on `device`."""
        raise NotImplementedError

    def reference(self, inputs: tuple[Any, ...]) -> Any:
        raise NotImplementedError

    def cost(self, case: dict[str, Any]) -> dict[str, Any] | None:
        """Minimum FLOPs and bytes for `case`, or None when the problem has no cost model."""
        return None

    def weight_bytes(self) -> int:
        """Bytes of state the reference holds besides its inputs (a model's weights), read by
        any kernel in its place: part of an estimated cost."""
        return 0

    def case_size(self, case: dict[str, Any]) -> CaseSize:
        """Inputs plus output of `case` without building it: the inputs drawn on the meta device
        (shapes, no data), the output from the reference run on them, or, where the reference
        cannot run on meta tensors, guessed as large as the inputs."""
        if not self.meta_inputs:
            return CaseSize(None, "its inputs cannot be drawn on the meta device")
        try:
            inputs = self.inputs(case, 0, "meta")
        except Exception as e:
            return CaseSize(None, f"drawing its inputs on the meta device raised {type(e).__name__}")
        drawn = _nbytes(inputs)
        try:
            with torch.no_grad():
                out = _nbytes(self.reference(inputs))
        except Exception:
            return CaseSize(
                2 * drawn,
                "output estimated as large as the inputs: the reference fails on meta tensors",
                True,
            )
        return CaseSize(drawn + out, "inputs and output on the meta device")

    def solution_side(self, lib_dir: Path) -> FormatSide:
        """What the solution process is told: the entry point and format, the names and modules
        of the reference it may not use, and the folders of helpers the format shares with
        solutions (written under `lib_dir`). Nothing of the reference itself."""
        return FormatSide(
            entry=self.entry_name,
            reference_names=["reference", "generate_input"],
            forbidden_modules=["problem", f"rung_problem_{self.name}"],
        )

    def describe(self) -> Problem:
        """The problem as the controller sees it: the data model's fields of this one."""
        return Problem(**{f.name: getattr(self, f.name) for f in dataclasses.fields(Problem)})


def _nbytes(tree: Any) -> int:
    return sum(t.numel() * t.element_size() for t in leaves(tree))
