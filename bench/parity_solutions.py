"""Solutions the parity suite generates: wrong ones made from a right one, and a later version.

Each is one self-contained file (both checkers import a solution by itself): the right solution's
source, then a wrapper that calls it and spoils its output in one known way. The spoilings are
ones a checker must catch: every element off by 1% (integers by one), all zeros, and an input
handed back as the output.
"""

from __future__ import annotations

from pathlib import Path

# How each wrong solution spoils the right output `out`, given the first input `first`.
SPOILERS = {
    "scaled": "out * 1.01 if out.is_floating_point() else out + 1",
    "zeroed": "torch.zeros_like(out)",
    "input": "first",
}


def gpumode_wrong(right_source: str, spoiler: str) -> str:
    """A GPU MODE submission: `custom_kernel(data)` runs the right one, then spoils its output."""
    return (
        f"{right_source.rstrip()}\n\n\n"
        "# parity suite: the right kernel above, its output spoiled below\n"
        "import torch as _parity_torch  # noqa: E402\n\n"
        "_parity_right = custom_kernel\n\n\n"
        "def custom_kernel(data):\n"
        "    torch = _parity_torch\n"
        "    out = _parity_right(data)\n"
        "    first = data[0] if isinstance(data, (tuple, list)) else data\n"
        f"    return {SPOILERS[spoiler]}\n"
    )


def kernelbench_same(problem_source: str) -> str:
    """A KernelBench solution equal to Model: the problem's own file, and ModelNew as Model."""
    return (
        f"{problem_source.rstrip()}\n\n\n"
        "class ModelNew(Model):\n"
        '    """The parity suite\'s right solution: Model itself."""\n'
    )


def kernelbench_scope() -> str:
    """A KernelBench solution that takes Model from the evaluator's namespace instead of defining
    it: KernelBench's own evaluation runs it (it execs the solution where Model already is);
    rung's solution process has no reference to take."""
    return (
        "import torch  # noqa: F401\n\n\n"
        "class ModelNew(Model):  # noqa: F821 - Model is the evaluator's\n"
        '    """Model, found in the namespace the solution runs in."""\n'
    )


def kernelbench_wrong(problem_source: str, spoiler: str) -> str:
    """A KernelBench solution whose forward is Model's, then spoiled."""
    return (
        f"{kernelbench_same(problem_source)}\n"
        "    def forward(self, *args):\n"
        "        out = super().forward(*args)\n"
        "        first = args[0]\n"
        f"        return {SPOILERS[spoiler]}\n"
    )


def later_version(source: str) -> str:
    """The same code as a new version (other bytes, so another content hash): what a warm check
    of 'the next version of the same problem' judges."""
    return f"{source.rstrip()}\n\n# parity suite: a later version of the solution above\n"


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return path
