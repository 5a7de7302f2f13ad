"""GPU MODE problem folders: `reference.py` + `task.yml`, used as they are.

    reference.py   generate_input(**case) -> data; ref_kernel(data); check_implementation(data, output)
    task.yml       tests: / benchmarks: (keyword dicts, usually with a seed); files: where each file
                   comes from ("@SUBMISSION@" marks the submission); optional description
    utils.py ...   siblings, often one folder up, imported as top-level modules

The files named in task.yml are staged under their names in one folder (as GPU MODE's runner
does), so they import each other unchanged. A submission defines `custom_kernel(data)` and gets
the single object generate_input returned. Where that object carries a preallocated output
(destination passing), the slot is found by running ref_kernel once (output_buffer.py: the
leaf it returns, writes, or ignores while returning a tensor of its shape), poisoned before every
call, and left out of the guard's "inputs unchanged" and "no alias" checks. The verdict on values
is the problem's own check_implementation: rung's dtype and shape rules and its tolerance become
warnings beside it (prefixsum writes float32 where the reference returns float64, which GPU MODE
accepts), failures only under RUNG_STRICT=1.
"""

from __future__ import annotations

import inspect
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from rung.common.loader import import_file
from rung.common.messages import FormatSide
from rung.common.poison import poison
from rung.common.trees import leaves
from rung.errors import ProblemError
from rung.judge.formats.base import CaseSize, LoadedProblem
from rung.judge.formats.output_buffer import designated_outputs
from rung.problem_data import GPUMODE_CHECK, case_list, gpumode_task, problem_name

SUBMISSION = "@SUBMISSION@"


class GpuModeProblem(LoadedProblem):
    def __init__(self, folder: Path) -> None:
        task, task_path = gpumode_task(folder), folder / "task.yml"
        staged = _stage(folder, task.get("files") or [])
        try:
            module = import_file(staged / "reference.py", f"rung_gpumode_{problem_name(folder)}")
        except BaseException as e:
            raise ProblemError(f"{folder / 'reference.py'}: import failed: {type(e).__name__}: {e}") from None
        for name in ("generate_input", "ref_kernel"):
            if not callable(getattr(module, name, None)):
                raise ProblemError(f"{folder / 'reference.py'}: defines no function {name}()")
        super().__init__(
            name=problem_name(folder),
            path=str(folder.resolve()),
            doc=str(task.get("description") or inspect.cleandoc(module.__doc__ or "")).strip(),
            tests=case_list(task["tests"], f"{task_path}: tests"),
            benchmarks=case_list(task.get("benchmarks") or [], f"{task_path}: benchmarks"),
        )
        self.module = module
        self.shared_files = [p for p in staged.glob("*.py") if p.name not in ("reference.py", "eval.py")]
        if staged == folder and (folder.parent / "utils.py").is_file():
            self.shared_files.append(folder.parent / "utils.py")
        self.meta_inputs = False  # generate_input chooses its own device
        self.owns_verdict = callable(getattr(module, "check_implementation", None))
        self.own_check = GPUMODE_CHECK if self.owns_verdict else ""
        self._slot_known = False

    def solution_side(self, lib_dir: Path) -> FormatSide:
        """task.py, utils.py and the other files the task shares with submissions, staged for the
        solution process; reference.py is the judge's and stays out."""
        lib_dir.mkdir(parents=True, exist_ok=True)
        for path in self.shared_files:
            shutil.copyfile(path, lib_dir / path.name)
        return FormatSide(
            entry=self.entry_name,
            format="gpumode",
            reference_names=["ref_kernel", "generate_input", "check_implementation"],
            forbidden_modules=["reference", f"rung_gpumode_{self.name}", "eval"],
            lib_dirs=[str(lib_dir)],
        )

    def listed_seed(self, case: dict[str, Any]) -> int | None:
        seed = case.get("seed")
        return int(seed) if isinstance(seed, int) else None

    def inputs(self, case: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        kwargs = dict(case)
        if "seed" in kwargs:
            kwargs["seed"] = seed
        data = self.module.generate_input(**kwargs)  # the problem picks its device itself
        self._find_output_slot(data)
        for i, leaf in enumerate(leaves(data)):
            if i in self.output_leaves:
                poison(leaf)
        return (data,)

    def reference(self, inputs: tuple[Any, ...]) -> Any:
        return self.module.ref_kernel(inputs[0])

    def case_size(self, case: dict[str, Any]) -> CaseSize:
        return CaseSize(
            None, "generate_input picks its own device, so the case has no size until it is built"
        )

    def check(self, inputs: tuple[Any, ...], output: Any, reference: Any = None) -> tuple[bool, str] | None:
        fn = getattr(self.module, "check_implementation", None)
        if fn is None:
            return None
        verdict = fn(inputs[0], output)
        if isinstance(verdict, tuple) and len(verdict) == 2:
            return bool(verdict[0]), str(verdict[1])
        if isinstance(verdict, (list, tuple)):
            return (not verdict), "; ".join(str(v) for v in verdict)
        if isinstance(verdict, str):
            return (not verdict), verdict
        return bool(verdict), "" if verdict else "check_implementation returned a false value"

    def _find_output_slot(self, data: Any) -> None:
        """Once: which input leaves, if any, are the preallocated outputs."""
        if self._slot_known:
            return
        self._slot_known = True
        self.output_leaves = designated_outputs(self.module.ref_kernel, data)


def _stage(folder: Path, files: list[Any]) -> Path:
    """A folder holding every file task.yml names, under its name; the problem folder itself if none."""
    if not files:
        parent = str(folder.resolve().parent)
        if parent not in sys.path:
            sys.path.append(parent)  # utils.py one folder up, as GPU MODE lays them out
        return folder
    staged = Path(tempfile.mkdtemp(prefix=f"rung-gpumode-{folder.name}-"))
    for entry in files:
        name, source = (entry.get("name"), entry.get("source")) if isinstance(entry, dict) else (None, None)
        if not name or not source or source == SUBMISSION:
            continue
        path = (folder / source).resolve()
        if not path.is_file():
            raise ProblemError(f"{folder / 'task.yml'}: files: {source} does not exist")
        shutil.copyfile(path, staged / name)
    if not (staged / "reference.py").is_file():
        shutil.copyfile(folder / "reference.py", staged / "reference.py")
    return staged
