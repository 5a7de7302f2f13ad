"""What a problem declares as data, read from its files without running any of them: its format
(`problem_format`), the name its runs are stored under (`problem_name`), its cases, tolerance,
description, and whether it has a cost model and a check of its own.

`rung problem` (and MCP's problem_info) answer from this alone, so they start no judge and touch
no CUDA; the judge takes its format, its name, a native problem's cases and a GPU MODE task.yml
from here too, so both read the same. Per format:

- rung's own folder: `cases.yml` beside `problem.py` where there is one (`tests:`, `benchmarks:`,
  optional `tolerance:`), else problem.py's TESTS, BENCHMARKS and TOLERANCE, which must be
  constant expressions: literals and arithmetic on them (`2**28`, `4 * 1024`), names bound to
  such values earlier in the file included;
- GPU MODE: `task.yml` (tests, benchmarks, description); reference.py defining
  check_implementation is its own check;
- KernelBench: the file's module-level constants are its one case, as its judge uses them.

Reading is by Python's `ast` and PyYAML's safe loader: a problem's code is never imported here.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from rung.errors import ProblemError
from rung.spec import Problem

KERNELBENCH_TRIALS = 5  # fresh inputs per case, as KernelBench's scripts' num_correct_trials
KERNELBENCH_CHECK = (
    "KernelBench's: the same shape, then allclose at atol=rtol=1e-4 (fp32) or 1e-2 "
    f"(fp16, bf16), {KERNELBENCH_TRIALS} trials"
)
GPUMODE_CHECK = "reference.py's check_implementation"

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


class NotConstant(ValueError):
    """An expression that needs the problem's code to run."""


def problem_format(where: Path) -> str:
    """The format the problem at `where` is written in, by its files alone: "kernelbench" (one
    .py file), "native" (a folder with problem.py, rung's own), "gpumode" (a folder with
    reference.py or task.yml). Both readers dispatch on it: `read` here, the judge's
    `rung.judge.formats.load_problem`."""
    if where.is_file() and where.suffix == ".py":
        return "kernelbench"
    if not where.is_dir():
        raise ProblemError(f"{where}: neither a problem folder nor a KernelBench .py file")
    if (where / "problem.py").is_file():
        return "native"
    if (where / "reference.py").is_file() or (where / "task.yml").is_file():
        return "gpumode"
    raise ProblemError(f"{where}: no problem.py (rung), reference.py (GPU MODE) or .py file (KernelBench)")


def problem_name(path: str | Path) -> str:
    """The name a problem's runs are stored under: a KernelBench file's stem, a folder's name
    (resolved, so `.` names its folder); a path that does not exist is taken as the name itself."""
    p = Path(path)
    return p.stem if p.is_file() else p.resolve().name if p.exists() else p.name


def read(path: str | Path) -> Problem:
    """The problem at `path` as data, in whichever format `rung.judge.formats` would load it."""
    where = Path(path)
    if not where.exists():
        raise ProblemError(f"{where}: no such folder or file")
    readers = {"native": _native, "gpumode": _gpumode, "kernelbench": _kernelbench}
    return readers[problem_format(where)](where)


def native_cases(folder: Path) -> dict[str, Any]:
    """A native problem's {"tests", "benchmarks", "tolerance"}: from cases.yml, else problem.py."""
    yml = folder / "cases.yml"
    if yml.is_file():
        declared = _yaml(yml)
        where = str(yml)
    else:
        where = str(folder / "problem.py")
        declared = _as_data(_module(folder / "problem.py"), ("TESTS", "BENCHMARKS", "TOLERANCE"), where)
    if "tests" not in declared:
        raise ProblemError(f"{where}: defines no TESTS")
    tolerance = declared.get("tolerance") or {}
    if not isinstance(tolerance, dict):
        raise ProblemError(f"{where}: TOLERANCE must be a dict")
    cases = {
        "tests": case_list(declared["tests"], f"{where}: TESTS"),
        "benchmarks": case_list(declared.get("benchmarks") or [], f"{where}: BENCHMARKS"),
        "tolerance": {str(k): float(v) for k, v in tolerance.items()},
    }
    if not cases["tests"]:
        raise ProblemError(f"{where}: TESTS is empty")
    return cases


def kernelbench_sizes(path: Path) -> dict[str, Any]:
    """A KernelBench file's module-level plain values (batch_size, dim, a shape tuple): its one
    case. Values a model's constructor takes; a dict or None at the top is no size."""
    return {
        k: v
        for k, v in constants(_module(path)).items()
        if not k.startswith("_") and isinstance(v, (bool, int, float, str, tuple, list))
    }


def case_list(value: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        raise ProblemError(f"{where} must be a list of keyword dicts")
    return [dict(c) for c in value]


def _as_data(module: ast.Module, names: tuple[str, ...], where: str) -> dict[str, Any]:
    """`names` as the module binds them, by lower-case key; one bound to anything but a constant
    expression (TESTS built by a loop) is a ProblemError naming its line."""
    bound = constants(module)
    for node in module.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in names for t in node.targets
        ):
            name = next(t.id for t in node.targets if isinstance(t, ast.Name) and t.id in names)
            if name not in bound:
                raise ProblemError(
                    f"{where}:{node.lineno}: {name} is not data ({ast.unparse(node.value)[:60]}): write it as"
                    " literals and arithmetic, or put the cases in cases.yml beside problem.py"
                )
    return {name.lower(): bound[name] for name in names if name in bound}


def constants(module: ast.Module) -> dict[str, Any]:
    """The module-level names bound to constant expressions (literals, arithmetic, names bound
    so before), in order; a name bound to anything else is left out."""
    bound: dict[str, Any] = {}
    for node in module.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        try:
            bound[target.id] = evaluate(node.value, bound)
        except NotConstant:
            bound.pop(target.id, None)
    return bound


def evaluate(node: ast.expr, names: dict[str, Any]) -> Any:
    """A constant expression's value: literals, containers of them, arithmetic, earlier names."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [evaluate(e, names) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict):
        keys = [k for k in node.keys if k is not None]  # None: a ** unpacking, which needs code
        if len(keys) == len(node.values):
            return {evaluate(k, names): evaluate(v, names) for k, v in zip(keys, node.values, strict=True)}
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = evaluate(node.left, names), evaluate(node.right, names)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)):
            return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        value = evaluate(node.operand, names)
        if isinstance(value, (int, float)):
            return _UNARY[type(node.op)](value)
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    raise NotConstant(ast.unparse(node)[:60])


def _native(folder: Path) -> Problem:
    module = _module(folder / "problem.py")
    for name in ("generate_input", "reference"):
        if name not in _bound(module):
            raise ProblemError(f"{folder / 'problem.py'}: defines no function {name}()")
    cases = native_cases(folder)
    return Problem(
        name=problem_name(folder),
        path=str(folder.resolve()),
        doc=(ast.get_docstring(module) or "").strip(),
        has_cost="cost" in _bound(module),
        **cases,
    )


def gpumode_task(folder: Path) -> dict[str, Any]:
    """A GPU MODE folder's task.yml, as read here and by the judge: a mapping with `tests:`, and
    reference.py beside it."""
    task_path = folder / "task.yml"
    if not (folder / "reference.py").is_file():
        raise ProblemError(f"{folder}: no reference.py (not a GPU MODE problem folder)")
    if not task_path.is_file():
        raise ProblemError(f"{folder}: no task.yml")
    task = _yaml(task_path)
    if "tests" not in task:
        raise ProblemError(f"{task_path}: has no tests:")
    return task


def _gpumode(folder: Path) -> Problem:
    task, task_path = gpumode_task(folder), folder / "task.yml"
    reference = _module(folder / "reference.py")
    return Problem(
        name=problem_name(folder),
        path=str(folder.resolve()),
        doc=str(task.get("description") or ast.get_docstring(reference) or "").strip(),
        tests=case_list(task["tests"], f"{task_path}: tests"),
        benchmarks=case_list(task.get("benchmarks") or [], f"{task_path}: benchmarks"),
        own_check=GPUMODE_CHECK if "check_implementation" in _bound(reference) else "",
    )


def _kernelbench(path: Path) -> Problem:
    module = _module(path)
    model = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise ProblemError(f"{path}: defines no Model")
    sizes = kernelbench_sizes(path)
    return Problem(
        name=problem_name(path),
        path=str(path.resolve()),
        doc=(ast.get_docstring(module) or ast.get_docstring(model) or "").strip(),
        tests=[sizes],
        benchmarks=[sizes],
        own_check=KERNELBENCH_CHECK,
    )


def _module(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_text(), str(path))
    except (OSError, SyntaxError, ValueError) as e:
        raise ProblemError(f"{path}: cannot be read: {e}") from None


def _bound(module: ast.Module) -> set[str]:
    """The names a module binds at its top level: functions, classes, assignments, imports."""
    names: set[str] = set()
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ProblemError(f"{path}: not YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ProblemError(f"{path}: must be a mapping (tests:, benchmarks:)")
    return data
