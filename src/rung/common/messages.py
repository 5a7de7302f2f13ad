"""What crosses between the judge and the solution process, and the controller's hello to a
judge, typed (standard library only).

The judge sends requests as JSON; the solution process answers with these reports, also JSON,
never a pickle. A report carries figures and descriptions of what the solution did, never a
verdict: the judge decides from the outputs it copied out and from its own reference.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass
class OutputMeta:
    """One tensor a call returned, as the solution process saw it: every field a claim of a
    process the solution's code runs in (the judge checks what it can observe itself)."""

    type: str  # the Python type's name ("Tensor" for a plain tensor, or a subclass so named)
    shape: list[int]
    dtype: str
    device: str
    contiguous: bool
    copied: bool  # copied into the judge's slot (shape, dtype and device as the slot's)
    alias_of_input: int | None = None  # index of the input leaf whose memory it shares
    same_object_as_before: bool = False  # the very tensor object an earlier call returned
    reuses_earlier_output: bool = False  # shares memory with an output of an earlier call still alive
    plain: bool = False  # type(x) is torch.Tensor: the type itself, not its name


@dataclass
class CallReport:
    """One call of the solution: what it returned, how long it took on the host, what it launched."""

    returned: str  # "tensor", "tuple of 2", or a description of something else ("None", "a dict")
    outputs: list[OutputMeta] = field(default_factory=list)
    seconds: float = 0.0
    launches: int = 0  # Triton launches over a non-empty grid
    kernels: list[str] = field(default_factory=list)  # GPU kernels the call ran, where asked (CUPTI)
    kernels_error: str = ""  # why the kernels could not be named (the profiler failed)
    error: str = ""  # "ExcType: message (at file.py:LINE in fn)" when the call raised
    error_type: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CallReport:
        outputs = [OutputMeta(**o) for o in d.get("outputs", [])]
        return cls(**{**d, "outputs": outputs})


@dataclass
class Harm:
    """What the solution process found the solution did to it, checked after every request."""

    patched: list[str] = field(default_factory=list)  # watched functions no longer the originals
    python_threads: int = 0  # threads running Python code, the harness's own left out

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class FormatSide:
    """What a problem's format tells the solution process, and nothing of its reference: the
    entry point, the reference's names and modules the solution may not use (to say so when it
    tries), the folders of helpers the format shares with solutions (GPU MODE's task.py)."""

    entry: str = "custom_kernel"
    format: str = "native"  # "native", "gpumode" or "kernelbench"
    init_inputs: list[Any] = field(default_factory=list)  # KernelBench: ModelNew's constructor arguments
    reference_names: list[str] = field(default_factory=list)
    forbidden_modules: list[str] = field(default_factory=list)
    lib_dirs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FormatSide:
        return cls(**d)


@dataclass
class SolutionStart:
    """The first message of a solution process: its source and what it may read and write."""

    source: str  # the judge's copy of the bytes that were hashed and stored
    scratch: str  # its folder: the only one, with the caches, it may write
    lib_dirs: list[str] = field(default_factory=list)  # readable: the format's shared helpers
    caches: list[str] = field(default_factory=list)  # compiler caches (Triton's, CUDA's), TMPDIR, HOME
    tool_dirs: list[str] = field(default_factory=list)  # readable: a profiler's own folder
    cpu_memory_mb: int = 0
    interpret: bool = True  # Triton's interpreter where there is no GPU (a builder compiles instead)
    confine: bool = True
    warm_profiler: bool = False
    side: FormatSide | None = None  # where it is known at the start (the profile target)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SolutionStart:
        side = d.get("side")
        return cls(**{**d, "side": FormatSide.from_dict(side) if side else None})


@dataclass
class JudgeHello:
    """The controller's first message to a judge (and the `adopt` op's): the problem, the
    solution as the source that was hashed and stored (None: a judge started to describe the
    problem, holding none yet), its run folder and seed, and the settings its solution
    process starts under. Built once by the controller (`runner`), read once by the judge."""

    problem: str  # the problem's folder (or file), resolved
    run_dir: str
    source: str | None = None
    solution_name: str = ""
    seed: int = 0
    cpu_memory_mb: int = 0
    confine: bool = True
    cwd: str = ""  # where the judge starts: the problem's folder
    # A judge holding no solution yet: whether the one it takes is likely built by compile (so
    # it imports ahead what compile's meta inputs need); a judge with a source tells for itself.
    builds: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JudgeHello:
        """The hello as sent: every field present, none other, each of its type (ValueError
        saying which is not)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown, missing = sorted(set(d) - names), sorted(names - set(d))
        if unknown or missing:
            raise ValueError(f"a judge hello with unknown keys {unknown} and missing keys {missing}")
        types: dict[str, tuple[type, ...]] = {
            "problem": (str,),
            "run_dir": (str,),
            "source": (str, type(None)),
            "solution_name": (str,),
            "seed": (int,),
            "cpu_memory_mb": (int,),
            "confine": (bool,),
            "cwd": (str,),
            "builds": (bool,),
        }
        wrong = [
            k
            for k, ok in types.items()
            if not isinstance(d[k], ok) or (ok == (int,) and isinstance(d[k], bool))
        ]
        if wrong:
            raise ValueError(f"a judge hello whose {', '.join(wrong)} is not of its type")
        return cls(**d)
